package svt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"dprl/internal/fielderr"
	"dprl/policy"
	"dprl/sessionlog"
)

// TestGenerateDataset: the files of dprl sims experts — snapshots, manifest
// and log — are written and described by the summary, and a second run with
// the same seed writes the same bytes.
func TestGenerateDataset(t *testing.T) {
	run := func() (DatasetConfig, DatasetSummary) {
		dir := t.TempDir()
		cfg := DatasetConfig{GenConfig: smallGen("cartpole", 2), Dir: filepath.Join(dir, "experts"), Log: filepath.Join(dir, "data.jsonl"), Seed: 3, Seeded: true}
		var phases []string
		res, err := GenerateDataset(context.Background(), cfg, func(p GenProgress) { phases = append(phases, p.Phase) })
		if err != nil {
			t.Fatal(err)
		}
		if len(phases) != cfg.Experts || phases[0] != "experts" {
			t.Errorf("progress phases %v", phases)
		}
		return cfg, res
	}
	cfg, res := run()
	mb, err := os.ReadFile(filepath.Join(cfg.Dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var man Manifest
	if err := json.Unmarshal(mb, &man); err != nil {
		t.Fatal(err)
	}
	if man.Format != ManifestFormat || man.Env != "cartpole" || man.Seed != 3 || !man.Seeded || len(man.Experts) != 4 || !reflect.DeepEqual(man.Hidden, []int{8}) {
		t.Errorf("manifest %+v", man)
	}
	var sum float64
	for j, e := range man.Experts {
		if _, err := os.Stat(filepath.Join(cfg.Dir, e.ID+".snap")); err != nil || e.ID != fmt.Sprintf("e%d", j) {
			t.Errorf("expert %d (%s): %v", j, e.ID, err)
		}
		sum += e.MeanReturn
	}
	f, err := os.Open(cfg.Log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := sessionlog.NewReader(f, sessionlog.ReaderOptions{})
	sessions, steps := 0, 0
	for {
		s, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sessions++
		steps += len(s.Steps)
	}
	id, _ := sessionlog.DatasetID(cfg.Log)
	if res.Sessions != 8 || sessions != 8 || res.Transitions != steps || res.DatasetID != id || res.Experts != 4 || res.TrajectoriesPerExpert != 2 ||
		!res.Seeded || res.Seed != 3 || res.Log != cfg.Log || res.OutDir != cfg.Dir {
		t.Errorf("summary %+v; log has %d sessions, %d steps, id %s", res, sessions, steps, id)
	}
	if !(res.ReturnMin <= res.ReturnMedian && res.ReturnMedian <= res.ReturnMax) || math.Abs(res.ReturnMean-sum/4) > 1e-9 {
		t.Errorf("returns min %v median %v max %v mean %v (experts' mean %v)", res.ReturnMin, res.ReturnMedian, res.ReturnMax, res.ReturnMean, sum/4)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "4 cartpole experts (p_min 0.02) in "+cfg.Dir+", 2 trajectories each: 8 sessions, ") ||
		!strings.Contains(text.String(), "training: 8 users per expert, from scratch\n") || !strings.Contains(text.String(), "("+id+")") {
		t.Errorf("text:\n%s", text.String())
	}

	cfg2, res2 := run()
	a, _ := os.ReadFile(cfg.Log)
	b, _ := os.ReadFile(cfg2.Log)
	m2, _ := os.ReadFile(filepath.Join(cfg2.Dir, ManifestFile))
	if !bytes.Equal(a, b) || !bytes.Equal(mb, m2) || res2.DatasetID != res.DatasetID {
		t.Error("same seed, different dataset")
	}
}

func TestDatasetConfigErrors(t *testing.T) {
	good := DatasetConfig{GenConfig: smallGen("cartpole", 1), Dir: "d", Log: "l"}
	for _, tc := range []struct {
		name string
		mod  func(*DatasetConfig)
		want string
	}{
		{"valid", func(*DatasetConfig) {}, ""},
		{"every-field", func(c *DatasetConfig) {
			c.Env, c.Experts, c.Trajectories, c.Dir, c.Log, c.Users, c.Workers = "pendulum", 0, 0, "", "", 0, -1
		}, "Env \"pendulum\": want cartpole or acrobot\nExperts 0: want >= 1\nTrajectories 0: want >= 1\nDir: required\nLog: required\nUsers 0: want >= 1\nWorkers -1: want >= 0"},
		{"bases-pmin", func(c *DatasetConfig) { c.Bases, c.FineTuneUsers, c.PMin = 5, 0, 0.9 },
			"Bases 5: want 0..M\nFineTuneUsers 0: want >= 1\nPMin 0.9: want in (0, 1/|A| = 1/2]"},
		{"pmin-acrobot", func(c *DatasetConfig) { c.Env, c.PMin = "acrobot", 0.4 }, "PMin 0.4: want in (0, 1/|A| = 1/3]"},
		{"training", func(c *DatasetConfig) { c.Train.DP.Mode = policy.ModeDP }, "want ppo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v\nwant %q", err, tc.want)
			}
		})
	}
	// The command line names its flags.
	c := good
	c.Experts, c.Dir = 0, ""
	names := map[string]string{"Experts": "--m", "Dir": "--out-dir"}
	if got := fielderr.Rename(c.Validate(), func(f string) string { return names[f] }).Error(); got != "--m 0: want >= 1\n--out-dir: required" {
		t.Errorf("renamed: %q", got)
	}
	cfg := good
	dir := t.TempDir()
	cfg.Dir, cfg.Log = dir, filepath.Join(dir, "missing", "data.jsonl")
	if _, err := GenerateDataset(context.Background(), cfg, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log in a missing directory: %v", err)
	}
	tc := ExpertTrainConfig()
	if err := tc.Validate(); err != nil || tc.DP.Mode != policy.ModePPO || tc.DP.UsersPerUpdate != 32 || !reflect.DeepEqual(tc.PPO.Hidden, []int{16, 16}) {
		t.Errorf("ExpertTrainConfig %+v: %v", tc, err)
	}
}
