package gtd2

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestPartition(t *testing.T) {
	tests := []struct {
		name     string
		n, parts int
		wantErr  bool
	}{
		{name: "even", n: 1000, parts: 10},
		{name: "uneven", n: 7, parts: 3},
		{name: "fewer trajectories than parts", n: 1, parts: 3},
		{name: "no parts", n: 5, parts: 0, wantErr: true},
		{name: "negative n", n: -1, parts: 2, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Partition(tc.n, tc.parts, rand.New(rand.NewPCG(1, 2)))
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil || len(got) != tc.parts {
				t.Fatalf("%d parts, err %v", len(got), err)
			}
			// Every trajectory in exactly one part, in increasing order.
			seen := make([]int, tc.n)
			for _, p := range got {
				for k, i := range p {
					seen[i]++
					if k > 0 && p[k-1] >= i {
						t.Errorf("part %v not increasing", p)
					}
				}
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("trajectory %d in %d parts", i, c)
				}
			}
			again, _ := Partition(tc.n, tc.parts, rand.New(rand.NewPCG(1, 2)))
			if !reflect.DeepEqual(got, again) {
				t.Error("the same draws gave another partition")
			}
		})
	}
}

func TestGPOPEParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds, err := Prepare(simulate(rng, 40), Tabular{chainN}, chainTarget{}, gamma)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Iters: 20, StepSize: 0.5, Clip: 1, Z: 1, Q: 0.2, Batch: 2}
	got, err := GPOPEParts(ds, cfg, 4, rand.New(rand.NewPCG(5, 6)))
	if err != nil || len(got) != 4 {
		t.Fatalf("%d releases, err %v", len(got), err)
	}
	// The labels first, then each part's run, all from the one generator.
	replay := rand.New(rand.NewPCG(5, 6))
	idx, _ := Partition(ds.NumTrajectories(), 4, replay)
	for b := range idx {
		want, err := GPOPE(Subset{Of: ds, Index: idx[b]}, cfg, replay)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[b], want) {
			t.Errorf("part %d: %v, want %v", b, got[b], want)
		}
	}
	withDiag, diag, err := GPOPEPartsWithDiagnostics(ds, cfg, 4, rand.New(rand.NewPCG(5, 6)))
	if err != nil || !reflect.DeepEqual(withDiag, got) || diag.Sampled == 0 {
		t.Errorf("with diagnostics: %v %+v %v", withDiag, diag, err)
	}
	// More parts than trajectories: empty parts release their noise only.
	one := &Dataset{Dim: ds.Dim, Gamma: ds.Gamma, Trajs: ds.Trajs[:1]}
	if res, err := GPOPEParts(one, cfg, 3, rand.New(rand.NewPCG(7, 8))); err != nil || len(res) != 3 {
		t.Errorf("empty parts: %v %v", res, err)
	}
	if _, err := GPOPEParts(ds, cfg, 1, rand.New(rand.NewPCG(7, 8))); err == nil {
		t.Error("one part accepted")
	}
}
