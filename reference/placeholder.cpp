// placeholder until reference/ lands
