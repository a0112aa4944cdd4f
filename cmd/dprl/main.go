// Command dprl is the differentially private reinforcement learning agent and
// toolkit: the long-running agent, offline modes on session logs, simulators
// and privacy accounting. See docs/privacy-model.md for the privacy model.
//
// main only parses flags and wires components; every subcommand lives in its
// own file with a newXCmd constructor.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"gonum.org/v1/gonum/blas/blas64"

	"dprl/internal/gemm"
)

func main() {
	// Every gonum matrix product of the program (mat, blas64) runs on dprl's
	// packed GEMM: single-threaded and deterministic at every size, and
	// several times faster than gonum's own Dgemm (internal/gemm).
	blas64.Use(gemm.Implementation{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
