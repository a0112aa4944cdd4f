package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain lets a test run dprl as a child process (a process to kill -9):
// with DPRL_CHILD_ARGS set (a JSON list of arguments) the test binary is
// dprl with those arguments.
func TestMain(m *testing.M) {
	if js := os.Getenv("DPRL_CHILD_ARGS"); js != "" {
		var args []string
		if err := json.Unmarshal([]byte(js), &args); err != nil {
			os.Exit(3)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, args, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
