// Package experiment holds dprl's experiment drivers: training runs (Train,
// Control), privacy-utility sweeps, regret curves, the DP-SGD baselines,
// worker pools and the aggregation of their results over seeds.
// Each driver takes a typed configuration with a Validate method (its
// errors name the fields at fault, internal/fielderr, so that the command
// renders them as its flags) and
// returns a result that marshals to the JSON the dprl command prints, with
// a WriteText method for its text and, for those with a figure, a Plot
// method (internal/chart). Flag parsing, help text and progress display stay in
// the command; drivers report progress through callbacks.
//
// Every run is deterministic in its seeds: each job has its own generator
// (PCG seeded by the run's seed and a stream that names the job), so results
// do not depend on the number of workers.
package experiment
