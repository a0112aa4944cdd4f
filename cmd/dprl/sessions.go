package main

import (
	"os"

	"github.com/spf13/cobra"

	"dprl/cmd/dprl/cliflags"
	"dprl/sessionlog/dsjson"
)

// newSessionsCmd returns "dprl sessions": converting session logs to and
// from other formats (package sessionlog/dsjson holds the logic).
func newSessionsCmd(a *app) *cobra.Command {
	return groupCmd("sessions", "Convert session logs to and from Vowpal Wabbit's DSJSON (non-private: raw data)",
		newSessionsImportDSJSONCmd(a), newSessionsExportDSJSONCmd(a))
}

func newSessionsImportDSJSONCmd(a *app) *cobra.Command {
	var (
		in, out string
		force   bool
		opt     dsjson.ReaderOptions
	)
	c := &cobra.Command{
		Use:   "import-dsjson --in F.dsjson --out F.jsonl",
		Short: "Import a DSJSON log (vw --dsjson, Azure Personalizer) as a session log of one-step sessions",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" || out == "" {
				return usagef("sessions import-dsjson: --in and --out are required")
			}
			if err := checkOut(out, force); err != nil {
				return err
			}
			st, err := dsjson.ImportFile(in, out, opt)
			return emit(a, st, err)
		},
	}
	cliflags.New(c.Flags(), &opt)
	c.Flags().StringVar(&in, "in", "", "DSJSON file to read")
	c.Flags().StringVar(&out, "out", "", "session log (dprl.sessions.v1) to write")
	c.Flags().BoolVar(&force, "force", false, "overwrite --out if it exists")
	c.Flags().Bool("json", false, "print the summary as JSON")
	return c
}

func newSessionsExportDSJSONCmd(a *app) *cobra.Command {
	var (
		in, out string
		actions int
		force   bool
	)
	c := &cobra.Command{
		Use:   "export-dsjson --in F.jsonl --out F.dsjson --actions K",
		Short: "Export a session log of one-step sessions as DSJSON",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in == "" || out == "" || actions < 1 || actions > dsjson.MaxActions {
				return usagef("sessions export-dsjson: --in, --out and --actions (1 to %d) are required", dsjson.MaxActions)
			}
			if err := checkOut(out, force); err != nil {
				return err
			}
			st, err := dsjson.ExportFile(in, out, actions)
			return emit(a, st, err)
		},
	}
	c.Flags().StringVar(&in, "in", "", "session log (dprl.sessions.v1) to read")
	c.Flags().StringVar(&out, "out", "", "DSJSON file to write")
	c.Flags().BoolVar(&force, "force", false, "overwrite --out if it exists")
	c.Flags().IntVar(&actions, "actions", 0, "number of discrete actions (every action index must be below it)")
	c.Flags().Bool("json", false, "print the summary as JSON")
	return c
}

// checkOut refuses an existing output file without --force.
func checkOut(out string, force bool) error {
	if _, err := os.Stat(out); err == nil && !force {
		return usagef("--out %s exists (pass --force to overwrite)", out)
	}
	return nil
}
