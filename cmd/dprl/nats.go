package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"dprl/agent/service"
	"dprl/cmd/dprl/cliflags"
	"dprl/stream"
)

func newNATSCmd(a *app) *cobra.Command {
	f := stream.NodeConfig{Partitions: service.DefaultPartitions, Prefix: stream.DefaultPrefix} // the defaults of their flags
	c := &cobra.Command{
		Use:   "nats",
		Short: "run a NATS server with JetStream: a node of the cluster dprl agent --role uses",
	}
	fl := cliflags.New(c.Flags(), &f)
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		o, err := f.Options()
		if err != nil {
			return usageError{fl.Rename(err)}
		}
		o.Logger = a.log
		s, err := stream.StartEmbedded(o)
		if err != nil {
			return err
		}
		defer s.Shutdown()
		ev := a.log.Info().Str("url", s.ClientURL()).Str("store", f.Store).Bool("sync_always", f.SyncAlways).Int("partitions", f.Partitions).
			Bool("auth", f.Auth != "").Bool("tls", f.TLSCert != "").Bool("encrypted", f.EncryptionKey != "")
		if f.Cluster != "" {
			ev = ev.Str("cluster", f.Cluster).Str("routes", fmt.Sprint(f.Routes))
		}
		ev.Msg("nats: serving with JetStream; stop with SIGINT or SIGTERM")
		<-cmd.Context().Done()
		return nil
	}
	return c
}
