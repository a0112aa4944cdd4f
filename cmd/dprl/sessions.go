package main

import (
	"strings"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/sessionlog/dsjson"
)

// newSessionsCmd returns "dprl sessions": converting session logs to and
// from other formats (package sessionlog/dsjson holds the logic).
func newSessionsCmd(a *app) *cobra.Command {
	return groupCmd("sessions", "Convert session logs to and from Vowpal Wabbit's DSJSON (non-private: raw data)",
		sessionsCmd[dsjson.ImportStats](a, &cobra.Command{
			Use:   "import-dsjson --in F.dsjson --out F.jsonl",
			Short: "Import a DSJSON log (vw --dsjson, Azure Personalizer) as a session log of one-step sessions",
		}, &dsjson.ImportArgs{}),
		sessionsCmd[dsjson.ExportStats](a, &cobra.Command{
			Use:   "export-dsjson --in F.jsonl --out F.dsjson --actions K",
			Short: "Export a session log of one-step sessions as DSJSON",
		}, &dsjson.ExportArgs{}))
}

// sessionsCmd completes c, a dprl sessions subcommand, with the flags of
// args (a pointer to the settings) and --json: it prints what args.Run
// returns once args.Validate accepts them.
func sessionsCmd[R texter](a *app, c *cobra.Command, args interface {
	Validate() error
	Run() (R, error)
}) *cobra.Command {
	fl := cliflags.New(c.Flags(), args)
	fl.Bool("json", false, "print the summary as JSON")
	c.RunE = func(*cobra.Command, []string) error {
		if err := args.Validate(); err != nil {
			return usagef("%s: %w", strings.TrimPrefix(c.CommandPath(), "dprl "), fl.Rename(err))
		}
		st, err := args.Run()
		return emit(a, st, fieldUsage("", fl, err))
	}
	return c
}
