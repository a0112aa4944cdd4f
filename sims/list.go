package sims

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// SpaceInfo is the listing form of an action space: its kind, N for a
// discrete space, the dimension and bounds of a box.
type SpaceInfo struct {
	Kind string    `json:"kind"`
	N    int       `json:"n,omitempty"`
	Dim  int       `json:"dim,omitempty"`
	Low  []float64 `json:"low,omitempty"`
	High []float64 `json:"high,omitempty"`
}

// String renders the space as discrete(n) or box(dim) low..high.
func (s SpaceInfo) String() string {
	if s.Kind == "discrete" {
		return fmt.Sprintf("discrete(%d)", s.N)
	}
	return fmt.Sprintf("box(%d) %v..%v", s.Dim, s.Low, s.High)
}

// EnvInfo describes a registered environment (one row of dprl sims list).
type EnvInfo struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	ObsDim      int       `json:"obs_dim"`
	Action      SpaceInfo `json:"action"`
	MaxSteps    int       `json:"max_steps"`
}

// Listing describes the registered environments in listing order.
type Listing []EnvInfo

// List describes every registered environment: its spaces and step limit.
func List() Listing {
	var rows Listing
	for _, info := range Registry() {
		env := info.New()
		as := env.ActionSpace()
		sp := SpaceInfo{Kind: as.Kind.String()}
		if as.Kind == Discrete {
			sp.N = as.N
		} else {
			sp.Dim, sp.Low, sp.High = len(as.Low), as.Low, as.High
		}
		rows = append(rows, EnvInfo{Name: info.Name, Description: info.Description,
			ObsDim: env.ObservationSpace().Dim(), Action: sp, MaxSteps: env.MaxSteps()})
	}
	return rows
}

// WriteText writes the listing as a table, one environment per row.
func (l Listing) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOBS DIM\tACTIONS\tMAX STEPS\tDESCRIPTION")
	for _, r := range l {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\n", r.Name, r.ObsDim, r.Action, r.MaxSteps, r.Description)
	}
	return tw.Flush()
}

// ParseState parses an internal state written as a JSON array of finite
// numbers ("[0.1, 0, -0.2]"), for StateSetter. It reads the components with
// strconv so that NaN and Inf are reported by name rather than as a JSON
// syntax error. label names the input in error messages (the CLI passes its
// flag name, "--init-state").
func ParseState(label, s string) ([]float64, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, fmt.Errorf("%s %q: want a JSON array of numbers such as [0.1, 0, -0.2]", label, s)
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	if t == "" {
		return []float64{}, nil
	}
	parts := strings.Split(t, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil && !math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: component %d: %q is not a number", label, i, strings.TrimSpace(p))
		}
		if !finite(v) {
			return nil, fmt.Errorf("%s: component %d is %v, want a finite number", label, i, v)
		}
		out[i] = v
	}
	return out, nil
}
