// Package report writes dprl report: the status page's figures, computed
// from a data directory's ledger alone (or, for a multi-policy agent, its
// models' ledgers, one section each), as PNG files and one
// self-contained HTML file (the status page's template, inline SVG and
// CSS, no script and no external resource), for an audit.
//
// It reads the ledger read-only: the releases (versions, times, per-session
// guarantees), the users' composed epsilons, and, with an EnvSpec naming
// a simulator, the released snapshots, which it evaluates on that public
// simulator (the learning curve: post-processing of the releases, with a
// fixed seed per version, so that it matches the agent's status page).
// The agent's operational metrics (sessions, latency) are not in the
// ledger and are not in a report.
//
// A running agent holds the ledger's lock; the report then reads a
// consistent copy the agent makes on request (ledger.Options.LiveView:
// the ledger as of that moment). Where the holder makes none (an older
// dprl), the report fails and says so: report on one of the agent's
// online backups (dprl agent --backup-dir) instead, or see its status
// page, which shows the same figures live.
package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"dprl/agent/service"
	"dprl/agent/statuspage"
	"dprl/internal/atomicfile"
	"dprl/internal/buildinfo"
	"dprl/ledger"
	"dprl/profile"

	"github.com/rs/zerolog"
)

// ErrExists is returned (wrapped, naming the file) when an output file
// exists and Options.Force is not set.
var ErrExists = errors.New("report: output exists")

// HTMLFile is the name of the report's HTML file in the output directory.
const HTMLFile = "report.html"

// Options configure Write.
type Options struct {
	// DataDir is the data directory holding the ledger (an agent's --data).
	DataDir string `flag:"data" usage:"the agent's data directory (required)"`
	// OutDir receives HTMLFile and one PNG per figure; created if missing.
	OutDir string `flag:"out" usage:"directory to write report.html and the PNGs to (created if missing)"`
	// EnvSpec names the simulator of the agent's policy (its --env):
	// the report then evaluates the released versions on it.
	EnvSpec string `flag:"env" usage:"the agent's --env: evaluate the released versions on that simulator"`
	// Force overwrites existing output files.
	Force bool `flag:"force" usage:"overwrite existing outputs"`
	// Now dates the report (zero: time.Now).
	Now time.Time
	// Logger receives the ledger's log lines.
	Logger zerolog.Logger
}

// Result is what Write wrote.
type Result struct {
	HTML string `json:"html"`
	// PNGs are the figures written, Skipped the figures left out (no data
	// yet, or categorical).
	PNGs    []string `json:"pngs"`
	Skipped []string `json:"skipped,omitempty"`
	// Policies are the ledgers reported on: one, or one per model of a
	// multi-policy agent.
	Policies []PolicyResult `json:"policies"`
}

// PolicyResult is what the report found in one ledger.
type PolicyResult struct {
	// Model names the model ("" for a single-policy agent's ledger).
	Model string `json:"model,omitempty"`
	// Version is the latest released version, Releases the number of
	// releases in the ledger.
	Version  uint64 `json:"version"`
	Releases int    `json:"releases"`
	// Head is the ledger head the report was computed at (SEQ:HASH, as
	// dprl ledger head prints it).
	Head string `json:"ledger_head"`
	// Curve says which versions were evaluated on which simulator, or why
	// there is no learning curve.
	Curve string `json:"curve"`
}

// WriteText prints what was written.
func (r Result) WriteText(w io.Writer) error {
	for _, p := range r.Policies {
		if p.Model != "" {
			fmt.Fprintf(w, "model %s: ", p.Model)
		}
		fmt.Fprintf(w, "ledger at head %s: policy version %d, %d releases; learning curve: %s\n", p.Head, p.Version, p.Releases, p.Curve)
	}
	fmt.Fprintf(w, "wrote %s\n", r.HTML)
	for _, p := range r.PNGs {
		fmt.Fprintf(w, "wrote %s\n", p)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "not drawn: %s\n", s)
	}
	return nil
}

// Write computes the report from the ledger in o.DataDir and writes it to
// o.OutDir. It writes nothing when an output exists without o.Force
// (ErrExists), and nothing when the ledger cannot be read.
func Write(o Options) (Result, error) {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	page, res, err := compute(o)
	if err != nil {
		return Result{}, err
	}
	res.HTML = filepath.Join(o.OutDir, HTMLFile)
	type png struct {
		path string
		fig  statuspage.PageFigure
	}
	var pngs []png
	for _, f := range page.Figures() {
		switch {
		case f.Empty():
			res.Skipped = append(res.Skipped, f.Title+" (no data yet)")
		case len(f.Bars) > 0:
			res.Skipped = append(res.Skipped, f.Title+" (categorical: in the HTML file only)")
		default:
			pngs = append(pngs, png{filepath.Join(o.OutDir, f.ID+".png"), f})
		}
	}
	if !o.Force {
		paths := []string{res.HTML}
		for _, p := range pngs {
			paths = append(paths, p.path)
		}
		for _, p := range paths {
			if _, err := os.Lstat(p); err == nil {
				return Result{}, fmt.Errorf("%w: %s (--force overwrites it)", ErrExists, p)
			}
		}
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return Result{}, fmt.Errorf("report: %w", err)
	}
	for _, p := range pngs {
		if err := pngChart(p.fig).Save(p.path); err != nil {
			return Result{}, fmt.Errorf("report: %s: %w", p.fig.ID, err)
		}
		res.PNGs = append(res.PNGs, p.path)
	}
	if err := atomicfile.Write(res.HTML, 0o644, func(w io.Writer) error { return statuspage.Render(w, page) }); err != nil {
		return Result{}, fmt.Errorf("report: %w", err)
	}
	return res, nil
}

// compute reads the ledger of o.DataDir, or with a multi-policy agent's
// data directory each model's, and builds the page.
func compute(o Options) (*statuspage.Page, Result, error) {
	var res Result
	page := &statuspage.Page{Title: "dprl report", Build: buildinfo.Get(), Generated: o.Now, Source: "the ledger in " + o.DataDir,
		OpsNote: "Sessions, set-aside reasons and act latency are the running agent's Prometheus metrics, not recorded in the ledger: " +
			"see the agent's status page or /metrics."}
	models, err := modelDirs(o.DataDir)
	if err != nil {
		return nil, Result{}, err
	}
	if len(models) > 0 {
		page.Source = fmt.Sprintf("the ledgers of %d models in %s", len(models), filepath.Join(o.DataDir, service.ModelsDir))
	}
	for _, m := range models {
		v, pr, err := policyView(o, m.name, m.dir, true)
		if err != nil {
			return nil, Result{}, fmt.Errorf("report: model %q: %w", m.name, err)
		}
		page.Policies, res.Policies = append(page.Policies, v), append(res.Policies, pr)
	}
	if len(models) == 0 {
		v, pr, err := policyView(o, "", o.DataDir, false)
		if err != nil {
			return nil, Result{}, fmt.Errorf("report: %w", err)
		}
		page.Policies, res.Policies = []statuspage.PolicyView{v}, []PolicyResult{pr}
		page.Source += " at head " + pr.Head
	}
	return page, res, nil
}

type modelDir struct{ name, dir string }

// modelDirs lists the models of a multi-policy agent's data directory
// (DIR/models/NAME holding a ledger); none when DIR holds a ledger itself.
func modelDirs(dir string) ([]modelDir, error) {
	if ok, err := ledger.Exists(dir); ok || err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(dir, service.ModelsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var out []modelDir
	for _, e := range ents {
		d := filepath.Join(dir, service.ModelsDir, e.Name())
		if ok, err := ledger.Exists(d); err != nil {
			return nil, err
		} else if ok && e.IsDir() {
			out = append(out, modelDir{e.Name(), d})
		}
	}
	return out, nil
}

// policyView reads one ledger (read-only, closed before returning). With
// several models (tolerant), a simulator that does not fit this model's
// policy leaves it without a curve, saying why; with one ledger it is an
// error.
func policyView(o Options, name, dir string, tolerant bool) (statuspage.PolicyView, PolicyResult, error) {
	store, err := ledger.Open(dir, ledger.Options{MustExist: true, ReadOnly: true, Logger: o.Logger})
	if err != nil {
		if errors.Is(err, ledger.ErrLocked) {
			err = fmt.Errorf("%w; a report of a running agent's ledger reads a copy the agent makes on request, and this holder made none: stop it, report on one of its backups (dprl agent --backup-dir), or see its status page (GET / on its --http address) for the same figures live", err)
		}
		return statuspage.PolicyView{}, PolicyResult{}, err
	}
	defer store.Close()
	h, err := store.Head()
	if err != nil {
		return statuspage.PolicyView{}, PolicyResult{}, err
	}
	v, err := statuspage.FromLedger(store, statuspage.LedgerOptions{Name: name,
		CapNote: "the agent's per-user caps are its configuration (--user-epsilon, --max-updates-per-user), not recorded in the ledger"})
	if err != nil {
		return statuspage.PolicyView{}, PolicyResult{}, err
	}
	pr := PolicyResult{Model: name, Version: v.Version, Releases: len(v.Releases), Head: ledger.HeadRef{Seq: h.Seq, Hash: h.Hash}.String()}
	if v.Curve, err = curve(store, o.EnvSpec, v.Version); err != nil {
		if !tolerant {
			return statuspage.PolicyView{}, PolicyResult{}, err
		}
		v.Curve = statuspage.CurveView{Reason: err.Error()}
	}
	if v.Curve.Env != "" {
		pr.Curve = fmt.Sprintf("%d versions evaluated on %s (%d episodes each, a fixed seed per version)", len(v.Curve.Points), v.Curve.Env, v.Curve.Episodes)
	} else {
		pr.Curve = "none: " + v.Curve.Reason
	}
	return v, pr, nil
}

// curve evaluates the released versions on simulator env ("": none).
func curve(store *ledger.Store, env string, latest uint64) (statuspage.CurveView, error) {
	if env == "" {
		return statuspage.CurveView{Reason: "no --env: give the agent's --env to evaluate the released versions on its simulator"}, nil
	}
	spec, pc, err := profile.AgentDefaults(env)
	if err != nil {
		return statuspage.CurveView{}, fmt.Errorf("--env: %w", err)
	}
	c, err := statuspage.NewSimCurve(env, spec, pc.PPO, store.Snapshot)
	if err != nil {
		return statuspage.CurveView{}, fmt.Errorf("--env: %w", err)
	}
	v, err := c.Compute(latest)
	if err != nil {
		return statuspage.CurveView{}, fmt.Errorf("--env %s does not fit the ledger's policy: %w", env, err)
	}
	return v, nil
}
