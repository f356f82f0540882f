// placeholder until model/ lands
