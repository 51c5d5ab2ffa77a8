enum ProvidersPlaceholder {}
