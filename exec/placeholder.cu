// placeholder until exec/ lands
