// Package vecmath holds dprl's vectorised element-wise kernels: the tanh of
// a slice (the hidden activations of every MLP) and the Adam update (run
// after every minibatch of every local update). On amd64 with AVX2 and FMA
// (detected at run time with golang.org/x/sys/cpu) they run four lanes at a
// time in Go assembly; elsewhere, and for slices too short for a vector,
// they run the same formulas in Go. Neither allocates.
//
// Tanh follows Go's math.Tanh (the Cephes algorithm) lane by lane, with a
// vectorised exp; its error against math.Tanh is tested at under 2 units in
// the last place over the whole line. Adam computes what policy.Adam
// documents, with sqrt(v/c2) written as sqrt(v) / sqrt(c2).
package vecmath
