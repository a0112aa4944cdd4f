package stream

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"dprl/internal/fielderr"

	"github.com/nats-io/nkeys"
)

// ClientFiles are the credentials of a client of the agent as an operator
// gives them: the settings of dprl replay, whose flags are named beside each
// field. Options reads them into connection options; its errors name the
// fields at fault (*fielderr.Error, ClientFilesFields), which the command
// renders as its flags.
type ClientFiles struct {
	// Identity is the client identity's name in the agent's clients file
	// (nats-identity): requests use its reply inbox (WithInbox).
	Identity string `flag:"nats-identity" usage:"client identity name (its entry in the agent's --nats-clients): requests use its reply inbox _INBOX.NAME"`
	// NKey is the identity's nkey seed file (nkey; WithNKey).
	NKey string `flag:"nkey" usage:"nkey seed file of the client identity"`
	// User and PasswordFile are the identity's user name and the file
	// holding its password (nats-user, nats-password-file), given together;
	// the password stays off the command line.
	User         string `flag:"nats-user" usage:"user name of the client identity"`
	PasswordFile string `flag:"nats-password-file" usage:"file holding the password of --nats-user"`
	// Creds is a NATS credentials file (creds; WithCredentials).
	Creds string `flag:"creds" usage:"NATS credentials file"`
	// TLSCA verifies the server; TLSCert and TLSKey are the client's
	// certificate for mutual TLS (tls-ca, tls-cert, tls-key; WithTLS).
	TLSCA   string `flag:"tls-ca" usage:"CA file to verify the NATS server"`
	TLSCert string `flag:"tls-cert" usage:"client certificate (mutual TLS)"`
	TLSKey  string `flag:"tls-key" usage:"client key (mutual TLS)"`
}

// ClientFilesFields are the fields the errors of ClientFiles may name.
var ClientFilesFields = fielderr.Fields{"User", "PasswordFile", "NKey", "Creds", "TLSCA", "TLSCert", "TLSKey"}

// Options returns the connection options of f. It reads the password file
// now (its trailing line break removed); the other files are read by
// Connect.
func (f ClientFiles) Options() ([]Option, error) {
	// A file that is not there is the settings' mistake: say so before
	// connecting, naming the field, as for the password file.
	for _, file := range [][2]string{{"NKey", f.NKey}, {"Creds", f.Creds}, {"TLSCA", f.TLSCA}, {"TLSCert", f.TLSCert}, {"TLSKey", f.TLSKey}} {
		if _, err := os.Stat(file[1]); file[1] != "" && err != nil {
			return nil, ClientFilesFields.Errorf("{%s}: %w", file[0], err)
		}
	}
	var opts []Option
	if f.Identity != "" {
		opts = append(opts, WithInbox(f.Identity))
	}
	if f.NKey != "" {
		opts = append(opts, WithNKey(f.NKey))
	}
	if f.Creds != "" {
		opts = append(opts, WithCredentials(f.Creds))
	}
	if (f.User == "") != (f.PasswordFile == "") {
		return nil, ClientFilesFields.Errorf("{User} and {PasswordFile} go together")
	}
	if f.User != "" {
		b, err := os.ReadFile(f.PasswordFile)
		if err != nil {
			return nil, ClientFilesFields.Errorf("{PasswordFile}: %w", err)
		}
		opts = append(opts, WithUserPassword(f.User, strings.TrimRight(string(b), "\r\n")))
	}
	if f.TLSCA != "" || f.TLSCert != "" || f.TLSKey != "" {
		opts = append(opts, WithTLS(f.TLSCA, f.TLSCert, f.TLSKey))
	}
	return opts, nil
}

// IdentityEntry is what dprl agent nkey prints for a new identity's public
// key pub: pub itself, or, given the identity's name, its entry of a
// clients file (a ClientIdentity as JSON).
func IdentityEntry(pub, name string) (string, error) {
	if name == "" {
		return pub, nil
	}
	b, err := json.Marshal(ClientIdentity{Name: name, NKey: pub})
	return string(b), err
}

// NewIdentityKey creates a fresh nkey user key pair for a client identity,
// writes its seed (the secret) and a line break to seedFile with mode 0600,
// never over an existing file, and returns the public key, the NKey of the
// identity's ClientIdentity. The client connects with WithNKey(seedFile).
func NewIdentityKey(seedFile string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	seed, err := kp.Seed()
	if err != nil {
		return "", err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(seedFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("seed file: %w", err)
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("seed file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("seed file: %w", err)
	}
	return pub, nil
}
