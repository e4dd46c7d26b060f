package metrics

// Reset brings every series back to its start, for a test that counts from zero.
var Reset = reset
