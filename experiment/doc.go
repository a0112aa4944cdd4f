// Package experiment holds dprl's experiment drivers: seed loops, regret
// curves, worker pools and the aggregation of their results. Each driver
// takes a typed configuration with a Validate method and returns a result
// that marshals to the JSON the dprl command prints; flag parsing, help
// text, printing and plotting stay in the command.
//
// Every run is deterministic in its seeds: each job has its own generator
// (PCG seeded by the run's seed and a stream that names the job), so results
// do not depend on the number of workers.
package experiment
