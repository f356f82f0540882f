// placeholder until sim/ lands
