public enum TestingPlaceholder {}
