// Carrier of the libraries' shared precompiled header (CMakeLists.txt): nothing to compile of its own.
