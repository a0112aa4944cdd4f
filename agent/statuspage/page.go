// Package statuspage builds and renders dprl's status page: the agent's
// page at its ops server's root (GET /) and the HTML file of dprl report.
// The page is server-rendered HTML (html/template, every value escaped)
// with inline SVG charts and no JavaScript.
//
// Every panel says what its values are (Privacy): either a release covered
// by the guarantee, with its epsilon and delta (the policy version and
// per-session parameters, and the learning curve, which evaluates released
// policies on a public simulator: post-processing), or operational, not
// differentially private, for the operator only (release times, the
// users' composed epsilons from the ledger, session counts and latency
// from the agent's Prometheus metrics). No panel holds a return, a reward
// or any other statistic of what a session contains: the agent releases no
// noised return, so the only learning curve is the simulated one.
//
// The data side is a Page holding one PolicyView per policy the agent
// serves, built from the ledger (FromLedger), the metrics (FromGatherer)
// and a simulated curve (SimCurve).
package statuspage

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"time"

	"dprl/internal/buildinfo"
	"dprl/ledger/accountant"
)

// OperationalLabel labels a panel of values that are not differentially
// private.
const OperationalLabel = "operational, not differentially private: for the operator only"

// NotPrivateLabel labels a panel of values covered by no privacy
// guarantee: a policy served that is not private.
const NotPrivateLabel = "NOT private: covered by no privacy guarantee"

// SimulatedNote labels the learning curve.
const SimulatedNote = "simulated users: post-processing of released policies"

// Privacy says what a panel's values are.
type Privacy struct {
	// Release is true for values covered by the guarantee: each policy
	// version is (Epsilon, Delta)-DP per Unit, and the values are the
	// releases or post-processing of them. False: operational.
	Release        bool
	Epsilon, Delta float64
	Unit           string
	// Fixed, with Release, says the values are a fixed offline release
	// (a policy dprl agent --serve-policy serves), charged by the ledger
	// entry LedgerSeq of the run that trained it.
	Fixed     bool
	LedgerSeq uint64
	// NotPrivate labels values covered by no guarantee that are not
	// operational telemetry either: a policy served that is NOT private.
	NotPrivate bool
}

// Label is the panel's privacy label.
func (p Privacy) Label() string {
	if p.NotPrivate {
		return NotPrivateLabel
	}
	if !p.Release {
		return OperationalLabel
	}
	if p.Fixed {
		return fmt.Sprintf("fixed offline release: the policy served is (ε = %s, δ = %s)-differentially private per %s (ledger entry %d)",
			formatNum(p.Epsilon), formatNum(p.Delta), cmpOr(p.Unit, "session"), p.LedgerSeq)
	}
	return fmt.Sprintf("release covered by the guarantee: each policy version is (ε = %s, δ = %s)-differentially private per %s",
		accountant.FormatEpsilon(p.Epsilon), formatNum(p.Delta), cmpOr(p.Unit, "session"))
}

// Short is the label in a few words, for a figure's caption: "release:
// (ε = 0.9, δ = 1e-05)-DP per session" or "operational, not DP: for the
// operator only".
func (p Privacy) Short() string {
	if p.NotPrivate {
		return "NOT private"
	}
	if p.Fixed {
		return fmt.Sprintf("fixed release: (ε = %s, δ = %s)-DP per %s", formatNum(p.Epsilon), formatNum(p.Delta), cmpOr(p.Unit, "session"))
	}
	if !p.Release {
		return "operational, not DP: for the operator only"
	}
	return fmt.Sprintf("release: (ε = %s, δ = %s)-DP per %s", accountant.FormatEpsilon(p.Epsilon), formatNum(p.Delta), cmpOr(p.Unit, "session"))
}

// Class is the panel's CSS class: "release" or "operational".
func (p Privacy) Class() string {
	if p.Release {
		return "release"
	}
	return "operational"
}

// Fact is one named value of a panel.
type Fact struct{ Name, Value string }

// Panel is one box of the page: facts, figures and a note, under one
// privacy label.
type Panel struct {
	ID, Title string
	Privacy   Privacy
	Facts     []Fact
	Figures   []Figure
	Note      string
}

// Section is a heading and its panels.
type Section struct {
	ID, Heading string
	Panels      []Panel
}

// Page is everything the page shows.
type Page struct {
	Title string
	// Source says what the page was computed from ("the running agent",
	// "the ledger in DIR").
	Source    string
	Build     buildinfo.Info
	Generated time.Time
	// Policies are the policies served, one section each.
	Policies []PolicyView
	// Ops is the agent's operational metrics; nil in a report, where
	// OpsNote says why there are none (with Ops, OpsNote qualifies them,
	// e.g. "all models together").
	Ops     *OpsView
	OpsNote string
	// Cluster, when not nil, is the agent's role in a cluster (dprl agent
	// --role learn or serve): a panel of its own.
	Cluster *ClusterView
	// Refresh, when positive, makes the browser reload the page every
	// Refresh seconds (an HTML meta refresh: no script, so the strict
	// content security policy stands); 0 for a static page (a report).
	Refresh int
}

// Sections are the page's sections: one per policy, then the agent's
// operational metrics.
func (p *Page) Sections() []Section {
	var out []Section
	for i, pv := range p.Policies {
		id := "policy"
		if len(p.Policies) > 1 {
			id = fmt.Sprintf("policy-%d-%s", i+1, slug(pv.Name))
		}
		h := "Policy"
		if pv.Name != "" {
			h += " " + pv.Name
		}
		out = append(out, Section{ID: id, Heading: h, Panels: pv.Panels(id, p.Generated)})
	}
	if p.Cluster != nil {
		out = append(out, Section{ID: "cluster", Heading: "Cluster", Panels: []Panel{p.Cluster.Panel()}})
	}
	ops := Section{ID: "agent", Heading: "Agent"}
	if p.Ops != nil {
		ops.Panels = p.Ops.Panels()
		if p.OpsNote != "" {
			ops.Heading += " (" + p.OpsNote + ")"
		}
	} else {
		ops.Panels = []Panel{{ID: "agent-metrics", Title: "Sessions and latency", Privacy: Privacy{}, Note: p.OpsNote}}
	}
	return append(out, ops)
}

// PageFigure is a figure with its panel's privacy label.
type PageFigure struct {
	Figure
	Privacy Privacy
}

// Figures returns every figure of the page, in page order, with unique
// IDs, each with its panel's privacy label.
func (p *Page) Figures() []PageFigure {
	var out []PageFigure
	for _, s := range p.Sections() {
		for _, pn := range s.Panels {
			for _, f := range pn.Figures {
				out = append(out, PageFigure{f, pn.Privacy})
			}
		}
	}
	return out
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slug turns a name into lower-case letters, digits and dashes.
func slug(s string) string {
	return strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

//go:embed page.html.tmpl
var templates embed.FS

var pageTemplate = template.Must(template.New("page.html.tmpl").
	Funcs(template.FuncMap{"operational": func() string { return OperationalLabel }}).
	ParseFS(templates, "page.html.tmpl"))

// Render writes the page as one self-contained HTML document: inline CSS
// and SVG, no script, no external resource.
func Render(w io.Writer, p *Page) error {
	return pageTemplate.Execute(w, p)
}

// ContentSecurityPolicy is the header the agent serves the page with: no
// script, no resource from anywhere but inline styles and data: images.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// age prints a duration rounded for people: "3m20s", "2h5m", "4d3h".
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		days := int(d / (24 * time.Hour))
		return fmt.Sprintf("%dd%dh", days, int((d-time.Duration(days)*24*time.Hour)/time.Hour))
	}
}

// ClusterView is a cluster role's part of the page (/status's cluster
// object): which processes are up and where the log is, nothing of users'
// data; operational.
type ClusterView struct {
	// Role is "learn" or "serve"; Name is the cluster's.
	Role, Name string
	// LogSeq is the position of the ledger of record the process's ledger
	// holds up to.
	LogSeq uint64
	// A learner's: its own name, whether it holds the writer lease, and
	// the holder as it last saw the lease.
	Holder      string
	LeaseHeld   *bool
	LeaseHolder string
	// A serving replica's: the session partitions it serves, of
	// PartitionCount.
	Partitions     []int
	PartitionCount int
}

// Panel is the cluster panel: the role and the fields it has.
func (c *ClusterView) Panel() Panel {
	role := c.Role
	switch c.Role {
	case "learn":
		role = "learn (a learner candidate)"
	case "serve":
		role = "serve (a serving replica)"
	}
	facts := []Fact{{"role", role}, {"cluster", c.Name}, {"log position followed", fmt.Sprint(c.LogSeq)}}
	if c.Holder != "" {
		facts = append(facts, Fact{"this learner", c.Holder})
	}
	if c.LeaseHeld != nil {
		held := "no: a candidate, following the log"
		if *c.LeaseHeld {
			held = "yes: the writer"
		}
		facts = append(facts, Fact{"holds the writer lease", held})
		holder := c.LeaseHolder
		if holder == "" {
			holder = "none seen"
		}
		facts = append(facts, Fact{"lease holder", holder})
	}
	if c.PartitionCount > 0 {
		parts := make([]string, len(c.Partitions))
		for i, p := range c.Partitions {
			parts[i] = fmt.Sprint(p)
		}
		served := "none"
		if len(parts) > 0 {
			served = strings.Join(parts, ", ")
		}
		facts = append(facts, Fact{"partitions served", fmt.Sprintf("%d of %d: %s", len(c.Partitions), c.PartitionCount, served)})
	}
	return Panel{ID: "cluster-role", Title: "Role", Privacy: Privacy{}, Facts: facts,
		Note: "which processes are up and where the ledger of record is: nothing of users' data"}
}
