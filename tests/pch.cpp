// Carrier of the tests' shared precompiled header (tests/CMakeLists.txt): nothing to compile of its own.
