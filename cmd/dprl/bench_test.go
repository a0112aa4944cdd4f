package main

import (
	"encoding/json"
	"testing"

	"dprl/stream/loadgen"
)

func TestBenchServe(t *testing.T) {
	code, out, errOut := runCLI(t, "bench", "serve", "--duration", "400ms", "--concurrency", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r loadgen.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !(r.AgentRPS > 0 && r.EchoRPS > 0 && r.AgentP99Ms > 0 && r.EchoP99Ms > 0) || r.RPSRatio != r.AgentRPS/r.EchoRPS {
		t.Errorf("result %+v", r)
	}
	if code, _, _ := runCLI(t, "bench", "serve", "--concurrency", "0"); code != exitUsage {
		t.Errorf("--concurrency 0: exit %d, want %d", code, exitUsage)
	}
}
