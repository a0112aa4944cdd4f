package report_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dprl/agent"
	"dprl/agent/service"
	"dprl/internal/testutil"
	"dprl/policy"
	"dprl/profile"
	"dprl/report"
)

// agentConfig is the agent's configuration for cartpole, as dprl agent
// --env cartpole makes it, with K = 2.
func agentConfig(t *testing.T) agent.Config {
	t.Helper()
	spec, pc, err := profile.AgentDefaults("cartpole")
	if err != nil {
		t.Fatal(err)
	}
	pc.DP.UsersPerUpdate = 2
	cfg := agent.DefaultConfig(spec, pc)
	cfg.Delta, cfg.MaxUpdatesPerUser, cfg.Seed, cfg.Workers = 1e-5, 1, 11, 1
	return cfg
}

// runAgent runs a real agent service (embedded NATS, Pebble ledger) on
// dir until it has released `releases` versions from distinct users'
// sessions, and returns it running.
func runAgent(t *testing.T, dir string, releases int) *service.Service {
	t.Helper()
	svc, err := service.StartService(context.Background(), service.ServiceConfig{Agent: agentConfig(t), DataDir: dir, EnvSpec: "cartpole"})
	if err != nil {
		t.Fatal(err)
	}
	a := svc.Agent()
	obs := []float64{0.01, -0.02, 0.03, 0.04}
	for i := range 2 * releases {
		id, user := fmt.Sprintf("s%d", i), fmt.Sprintf("u%d", i)
		for step := range 5 {
			if _, err := a.Act(id, user, obs, 1, step > 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.End(id, user, 1, true); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			want := uint64(i/2 + 1)
			testutil.EventuallyTrue(t, 20*time.Second, fmt.Sprintf("version %d", want), func() bool { return a.Version() == want })
		}
	}
	return svc
}

// TestReportFromAgentLedger writes a report from the ledger of a real
// short agent run: one HTML file (every panel labelled, inline SVG, no
// script) and a PNG per figure; it refuses to overwrite without Force and
// overwrites with it.
func TestReportFromAgentLedger(t *testing.T) {
	dir := t.TempDir()
	if err := runAgent(t, dir, 2).Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report")
	res, err := report.Write(report.Options{DataDir: dir, OutDir: out, EnvSpec: "cartpole"})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Policies; len(p) != 1 || p[0].Version != 2 || p[0].Releases != 2 || !strings.Contains(p[0].Curve, "3 versions evaluated on cartpole") || !strings.HasPrefix(p[0].Head, "2:") {
		t.Errorf("result %+v", res)
	}
	html, err := os.ReadFile(res.HTML)
	if err != nil {
		t.Fatal(err)
	}
	page := string(html)
	for _, want := range []string{"<title>dprl report</title>", "Released policies on the cartpole simulator", "release covered by the guarantee", "ε = ",
		"not recorded in the ledger", "worst user", "<svg "} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "http://") && !strings.Contains(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Error("report.html is not self-contained")
	}
	if n, m := strings.Count(page, `<div class="panel"`), strings.Count(page, `<span class="badge `); n != m-2 { // the header shows the two badges
		t.Errorf("%d panels, %d privacy badges", n, m-2)
	}
	want := []string{"policy-releases.png", "policy-curve.png", "policy-users.png"}
	if len(res.PNGs) != len(want) {
		t.Fatalf("PNGs %v, want %v", res.PNGs, want)
	}
	for i, p := range res.PNGs {
		if filepath.Base(p) != want[i] {
			t.Errorf("PNG %d is %s, want %s", i, p, want[i])
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() < 400 || img.Bounds().Dy() < 250 {
			t.Errorf("%s: not a figure (%v)", p, err)
		}
	}
	t.Logf("report written to %s", out)

	// An existing output is refused, and left as it was.
	before, _ := os.Stat(res.HTML)
	_, err = report.Write(report.Options{DataDir: dir, OutDir: out})
	if !errors.Is(err, report.ErrExists) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second report without Force: %v, want ErrExists naming --force", err)
	}
	if after, _ := os.Stat(res.HTML); !after.ModTime().Equal(before.ModTime()) {
		t.Error("a refused report rewrote report.html")
	}
	res, err = report.Write(report.Options{DataDir: dir, OutDir: out, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	html, _ = os.ReadFile(res.HTML)
	if !strings.Contains(string(html), "no --env") || len(res.PNGs) != 2 {
		t.Errorf("forced report without --env: %d PNGs; curve note present: %v", len(res.PNGs), strings.Contains(string(html), "no --env"))
	}
}

// TestReportErrors: a simulator that does not fit the ledger's policy is
// an error, and a directory without a ledger is one.
func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	if err := runAgent(t, dir, 1).Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r")
	if _, err := report.Write(report.Options{DataDir: dir, OutDir: out, EnvSpec: "pendulum"}); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("pendulum on a cartpole ledger: %v", err)
	}
	if _, err := report.Write(report.Options{DataDir: t.TempDir(), OutDir: out}); err == nil || !strings.Contains(err.Error(), "no ledger") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed report created %s", out)
	}
}

// TestReportOfRunningAgent: a report on the data directory of an agent
// that is running (it holds the ledger's lock) reads the consistent copy
// the agent makes on request, as of the report's start; the agent keeps
// serving and releasing, and the copy is gone once the report is written.
func TestReportOfRunningAgent(t *testing.T) {
	dir := t.TempDir()
	svc := runAgent(t, dir, 2)
	defer svc.Close()
	res, err := report.Write(report.Options{DataDir: dir, OutDir: filepath.Join(t.TempDir(), "r"), EnvSpec: "cartpole"})
	if err != nil {
		t.Fatalf("report on a running agent's ledger: %v", err)
	}
	if p := res.Policies; len(p) != 1 || p[0].Version != 2 || p[0].Releases != 2 || !strings.HasPrefix(p[0].Head, "2:") {
		t.Errorf("result %+v", res)
	}
	if copies, _ := filepath.Glob(filepath.Join(dir, "live", "copy-*")); len(copies) != 0 {
		t.Errorf("copies left after the report: %v", copies)
	}
	a := svc.Agent()
	for i := range 2 {
		id, user := fmt.Sprintf("t%d", i), fmt.Sprintf("v%d", i)
		if _, err := a.Act(id, user, []float64{0.01, -0.02, 0.03, 0.04}, 1, false); err != nil {
			t.Fatal(err)
		}
		if _, err := a.End(id, user, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	testutil.EventuallyTrue(t, 20*time.Second, "version 3 after the report", func() bool { return a.Version() == 3 })
}

// TestReportModels reports on a multi-policy agent's data directory: one
// section per model, each from its own ledger; --env gives a curve to
// the model whose policy fits the simulator and says why the other has
// none.
func TestReportModels(t *testing.T) {
	dir := t.TempDir()
	tiny := agent.DefaultConfig(policy.Spec{ObsDim: 3, Kind: policy.ActionDiscrete, NumActions: 3}, policy.DefaultControlConfig())
	tiny.Seed, tiny.Workers = 3, 1
	svc, err := service.StartService(context.Background(), service.ServiceConfig{DataDir: dir,
		Models: []service.ModelConfig{{Name: "cartpole", Agent: agentConfig(t), EnvSpec: "cartpole"}, {Name: "tiny", Agent: tiny}}})
	if err != nil {
		t.Fatal(err)
	}
	a := svc.Policies()[0].Agent()
	for i := range 2 {
		id := fmt.Sprintf("s%d", i)
		for step := range 3 {
			if _, err := a.Act(id, id, []float64{0.01, 0.02, 0.03, 0.04}, 1, step > 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.End(id, id, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	testutil.EventuallyTrue(t, 20*time.Second, "cartpole version 1", func() bool { return a.Version() == 1 })
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := report.Write(report.Options{DataDir: dir, OutDir: filepath.Join(t.TempDir(), "r"), EnvSpec: "cartpole"})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Policies
	if len(p) != 2 || p[0].Model != "cartpole" || p[0].Version != 1 || !strings.Contains(p[0].Curve, "2 versions evaluated") ||
		p[1].Model != "tiny" || p[1].Version != 0 || !strings.Contains(p[1].Curve, "does not fit") {
		t.Errorf("policies %+v", p)
	}
	html, _ := os.ReadFile(res.HTML)
	for _, want := range []string{"<h2>Policy cartpole</h2>", "<h2>Policy tiny</h2>", "policy-1-cartpole-curve"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
