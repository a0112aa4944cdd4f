package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"dprl/internal/buildinfo"
	"dprl/internal/progress"
	"dprl/internal/rng"
)

// Exit statuses of the dprl command.
const (
	exitOK      = 0 // success
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line was wrong
)

// usageError marks an error caused by the command line rather than by the run.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usage error (exit status 2) with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// app carries what every subcommand shares: output streams, the logger and
// the global flags. It is built once per invocation; there is no package state.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            zerolog.Logger
	logLevel       string
	logFormat      string
	cmd            *cobra.Command // the command running
}

// run executes the dprl command line and returns the process exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, log: zerolog.Nop()}
	root := newRootCmd(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	msg := oneLine(err.Error())
	if !strings.HasPrefix(msg, "dprl") {
		msg = "dprl: " + msg
	}
	fmt.Fprintln(stderr, msg)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// oneLine folds a multi-line message so that an error is one line on stderr.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// isCobraUsage recognises the few usage errors cobra builds itself (unknown
// subcommands); flag errors are wrapped by the FlagErrorFunc instead.
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown shorthand") ||
		strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "required flag") ||
		strings.Contains(msg, "arg(s)")
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:               "dprl",
		Short:             "Differentially private reinforcement learning for production personalization",
		Version:           buildinfo.Get().String(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		RunE:              func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { a.cmd = cmd; return a.setupLogging() },
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error or disabled")
	root.PersistentFlags().StringVar(&a.logFormat, "log-format", "auto", "log format: auto (console on a terminal, JSON otherwise), console or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newAccountantCmd(a),
		newAuditCmd(a),
		newLedgerCmd(a),
		newSimsCmd(a),
		newAgentCmd(a),
		newDemoCmd(a),
		newReplayCmd(a),
		newNATSCmd(a),
		newBenchCmd(a),
		newTrainCmd(a),
		newOfflineCmd(a),
		newSessionsCmd(a),
		newPlotCmd(a),
		newReportCmd(a),
		newVersionCmd(a),
	)
	fillCommands(root)
	return root
}

// hideSentinelDefaults keeps the help from printing a default that is a
// sentinel rather than a value: NaN ("unset: the --env simulator's, else
// ...", which the flag's text explains) and an empty list. pflag prints
// every default it does not recognise as a zero value ("(default NaN)",
// "(default [])").
func hideSentinelDefaults(c *cobra.Command) {
	hide := func(f *pflag.Flag) {
		switch f.DefValue {
		case "NaN":
			f.DefValue = "0" // pflag's zero for a float flag: not printed
		case "[]":
			// pflag hides "[]" itself for int, string and string-array
			// lists (and would print "" for them); not for the others.
			if t := f.Value.Type(); t != "intSlice" && t != "stringSlice" && t != "stringArray" {
				f.DefValue = ""
			}
		}
	}
	c.LocalFlags().VisitAll(hide)
	c.PersistentFlags().VisitAll(hide)
}

// newVersionCmd is dprl version: the build (as --version prints it).
func newVersionCmd(a *app) *cobra.Command {
	c := &cobra.Command{Use: "version", Short: "Print the build: version, VCS revision, Go version",
		RunE: func(*cobra.Command, []string) error { return emit(a, buildinfo.Get(), nil) }}
	c.Flags().Bool("json", false, "print the build as JSON")
	return c
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usagef("%s: unknown command %q (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
		}
		return usagef("%s: unexpected argument %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// groupCmd returns a parent command that only holds subcommands.
func groupCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("%s: unknown subcommand %q (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usagef("%s: missing subcommand (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
		},
	}
	c.AddCommand(subs...)
	return c
}

// setupLogging builds the zerolog logger from --log-level and --log-format.
// Logs go to stderr; results go to stdout.
func (a *app) setupLogging() (err error) {
	if a.log, err = progress.NewLogger(a.stderr, a.logLevel, a.logFormat); err != nil {
		return usageError{err}
	}
	return nil
}

// task returns a progress task of the command named what: a live line on
// a terminal stderr, log lines otherwise, nothing above --log-level info.
func (a *app) task(what string) *progress.Task {
	return progress.NewTask(a.stderr, progress.IsTerminal(a.stderr), a.log, what)
}

// texter is a result with a human-readable form.
type texter interface{ WriteText(io.Writer) error }

// json reports whether the running command's --json is set.
func (a *app) json() bool {
	if a.cmd == nil { // the root's PersistentPreRunE records it (TestOneSetupHook)
		return false
	}
	v, _ := a.cmd.Flags().GetBool("json")
	return v
}

// emit prints res, as one indented JSON document with the running
// command's --json, otherwise in its human-readable form; or returns err,
// if not nil.
func emit[R texter](a *app, res R, err error) error {
	if err != nil {
		return err
	}
	if a.json() {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(a.stdout)
}

// seedFlag returns the value of the uint64 flag name (normally --seed) if
// it was set on the command line, and otherwise a seed drawn from the
// operating system's secure generator.
func seedFlag(cmd *cobra.Command, name string, v uint64) uint64 {
	if cmd.Flags().Changed(name) {
		return v
	}
	return rng.SecureSeed()
}
