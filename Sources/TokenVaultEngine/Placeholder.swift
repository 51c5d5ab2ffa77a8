enum EnginePlaceholder {}
