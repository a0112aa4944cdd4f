// Package vecmath holds dprl's vectorised element-wise kernels: the tanh of
// a slice (the hidden activations of every MLP), the Adam update (run
// after every minibatch of every local update), the Polyak update of target
// networks, ReLU and its derivative, the tanh's derivative, and a layer's
// bias gradient (column sums). On amd64 with AVX2 and FMA (detected at run time with
// golang.org/x/sys/cpu) they run four lanes at a time in Go assembly;
// elsewhere, and for slices too short for a vector, they run the same
// formulas in Go. None of them allocates.
//
// Where the CPU also has AVX-512 (AVX512F and AVX512DQ, detected the same
// way), each function runs an eight-lane kernel on the leading multiple of
// 8 elements, the four-lane AVX2 kernel on the next 4 if there are, and its
// usual tail (Go, or for Tanh the AVX2 kernel on a padded copy) on the last
// len%4: the same elements go through vector code as on an AVX2 machine.
// The AVX-512 kernels are ports of the AVX2 ones lane for lane (the same
// constants and the same operations, fused or not, in the same order), so
// they give bit-identical results, NaN, -0 and +-Inf included: a seeded run
// gives the same bits on AVX2 and AVX-512 machines. Tests compare the two
// on every length up to 67 and on special values in every lane.
//
// Tanh follows Go's math.Tanh (the Cephes algorithm) lane by lane, with a
// vectorised exp; its error against math.Tanh is tested at under 2 units in
// the last place over the whole line. Adam computes what policy.Adam
// documents, with sqrt(v/c2) written as sqrt(v) / sqrt(c2).
package vecmath
