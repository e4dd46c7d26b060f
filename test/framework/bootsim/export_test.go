package bootsim

// BootErr is Boot returning its error instead of failing the test, for the simulator's tests of
// what it refuses.
var BootErr = boot
