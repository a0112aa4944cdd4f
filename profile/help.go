package profile

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"dprl/policy"
	"dprl/sims"
)

// trainFlag is a dprl train flag whose default is the environment's: its
// name and its value in a training configuration.
type trainFlag struct {
	name  string
	value func(p Profile, cfg policy.Config, noise policy.Noise) string
}

// trainFlags are dprl train's flags whose defaults come from the profile
// (TrainLearner), in the order the help lists them.
var trainFlags = []trainFlag{
	{"z", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.DP.NoiseMultiplier) }},
	{"K", func(_ Profile, c policy.Config, _ policy.Noise) string { return strconv.Itoa(c.DP.UsersPerUpdate) }},
	{"clip", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.DP.ClipNorm) }},
	{"policy-share", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.DP.PolicyClipShare) }},
	{"noise", func(_ Profile, _ policy.Config, n policy.Noise) string { return n.String() }},
	{"server-lr", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.PPO.ServerLR) }},
	{"lr", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.PPO.Adam.LR) }},
	{"epochs", func(_ Profile, c policy.Config, _ policy.Noise) string { return strconv.Itoa(c.PPO.Epochs) }},
	{"steps-per-user", func(_ Profile, c policy.Config, _ policy.Noise) string { return strconv.Itoa(c.PPO.StepsPerUser) }},
	{"hidden", func(_ Profile, c policy.Config, _ policy.Noise) string { return joinNums(c.PPO.Hidden) }},
	{"ent-coef", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.PPO.EntropyCoef) }},
	{"gamma", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.PPO.Gamma) }},
	{"gae-lambda", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(c.PPO.Lambda) }},
	{"adv-norm", func(_ Profile, c policy.Config, _ policy.Noise) string {
		return strconv.FormatBool(c.PPO.NormalizeAdvantages)
	}},
	{"moment-reset", func(_ Profile, c policy.Config, _ policy.Noise) string { return momentResetName(c.PPO.MomentReset) }},
	{"value-scale", func(_ Profile, c policy.Config, _ policy.Noise) string { return num(max(c.PPO.ValueScale, 1)) }},
	{"obs-scale", func(_ Profile, c policy.Config, _ policy.Noise) string {
		if len(c.PPO.ObsScale) == 0 {
			return "none"
		}
		return joinNums(c.PPO.ObsScale)
	}},
	{"users", func(p Profile, _ policy.Config, _ policy.Noise) string { return strconv.Itoa(p.Users) }},
	{"average", func(p Profile, _ policy.Config, _ policy.Noise) string { return num(p.Average) }},
}

// TrainFlagNames returns the names (without dashes) of dprl train's flags
// whose default is the environment's: TrainDefaultsHelp lists their values.
func TrainFlagNames() []string {
	names := make([]string, len(trainFlags))
	for i, f := range trainFlags {
		names[i] = f.name
	}
	return names
}

// ByEnv is the usage note of a dprl train flag whose default
// TrainDefaultsHelp lists, with note (e.g. the paper's value) if not "".
func ByEnv(note string) string {
	if note != "" {
		note = "; " + note
	}
	return " (default: by --env, listed above" + note + ")"
}

// byEnvMark is a mark in a usage that ExpandByEnv replaces: {byenv} or
// {byenv:NOTE}.
var byEnvMark = regexp.MustCompile(`\{byenv(?::([^}]*))?\}`)

// ExpandByEnv returns usage with each mark {byenv} replaced by ByEnv("")
// and each {byenv:NOTE} by ByEnv(NOTE): the usages of the flags that
// experiment.TrainArgs tags.
func ExpandByEnv(usage string) string {
	return byEnvMark.ReplaceAllStringFunc(usage, func(m string) string {
		return ByEnv(byEnvMark.FindStringSubmatch(m)[1])
	})
}

// TrainDefaultsHelp returns the text of dprl train's help that gives the
// defaults of TrainFlagNames for every registered environment, read from
// the profiles (TrainLearner): one line of the values most environments
// share, then, per group of environments that differ, only what differs.
// Lines are wrapped to width and indented by two spaces.
func TrainDefaultsHelp(width int) string {
	names := sims.Names()
	values := make([][]string, len(names)) // values[env][flag]
	for i, name := range names {
		p, err := Get(name)
		if err != nil {
			continue // TestEveryEnvHasProfile keeps this from happening
		}
		cfg, noise := p.TrainLearner()
		for _, f := range trainFlags {
			values[i] = append(values[i], f.value(p, cfg, noise))
		}
	}
	common := make([]string, len(trainFlags))
	for j := range trainFlags {
		count := map[string]int{}
		for i := range names {
			if values[i] != nil {
				if count[values[i][j]]++; count[values[i][j]] > count[common[j]] {
					common[j] = values[i][j]
				}
			}
		}
	}
	var b strings.Builder
	wrap(&b, "most environments:", flagList(common, func(int) bool { return true }), width)
	var groups, diffs []string // environments with the same differences
	for i, name := range names {
		if values[i] == nil {
			continue
		}
		d := flagList(values[i], func(j int) bool { return values[i][j] != common[j] })
		if d == "" {
			continue
		}
		if k := slices.Index(diffs, d); k >= 0 {
			groups[k] += ", " + name
		} else {
			groups, diffs = append(groups, name), append(diffs, d)
		}
	}
	for k := range groups {
		wrap(&b, groups[k]+":", diffs[k], width)
	}
	// The non-private baseline, where its learner differs from the
	// private one's (in the flags above; --average is dppg's only).
	for _, name := range names {
		p, err := Get(name)
		if err != nil {
			continue
		}
		cfg, noise := p.TrainLearner()
		base, bp := p.TrainBaseline(), p
		bp.Users = p.BaselineUsers
		var d []string
		for _, f := range trainFlags {
			if f.name == "z" || f.name == "clip" || f.name == "policy-share" || f.name == "noise" || f.name == "average" {
				continue // not read by --algo ppo
			}
			if v := f.value(bp, base, noise); v != f.value(p, cfg, noise) {
				d = append(d, "--"+f.name+" "+v)
			}
		}
		if len(d) > 0 {
			wrap(&b, name+" with --algo ppo:", strings.Join(d, " "), width)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// flagList renders the values kept by keep as "--name value" (a boolean as
// --name or --name=false).
func flagList(values []string, keep func(j int) bool) string {
	var parts []string
	for j, v := range values {
		if !keep(j) {
			continue
		}
		switch name := trainFlags[j].name; v {
		case "true":
			parts = append(parts, "--"+name)
		case "false":
			parts = append(parts, "--"+name+"=false")
		default:
			parts = append(parts, "--"+name+" "+v)
		}
	}
	return strings.Join(parts, " ")
}

// wrap writes "  label text" to b, broken between flags ("--") to lines of
// at most width characters where it can be, continuation lines indented.
func wrap(b *strings.Builder, label, text string, width int) {
	line := "  " + label
	for _, item := range strings.SplitAfter(text, " --") {
		item = strings.TrimSuffix(item, " --")
		if !strings.HasPrefix(item, "--") {
			item = "--" + item
		}
		if len(line)+1+len(item) > width && strings.TrimSpace(line) != label {
			b.WriteString(line + "\n")
			line = "     "
		}
		line += " " + item
	}
	b.WriteString(line + "\n")
}

// momentResetName is the --moment-reset name of m (ParseMomentReset).
func momentResetName(m policy.MomentReset) string {
	switch m {
	case policy.ResetPaper:
		return "paper"
	case policy.ResetSecond:
		return "second"
	case policy.ResetZero:
		return "zero"
	}
	return fmt.Sprint(int(m))
}

// num formats x as the shortest decimal that parses back to it.
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// joinNums formats xs comma-separated, as the slice flags take them.
func joinNums[T int | float64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
