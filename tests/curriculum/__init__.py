"""Oracle tests of the curriculum: reference solutions against independent implementations, stubs against solutions."""
