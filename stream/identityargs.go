package stream

import (
	"errors"
	"io/fs"

	"dprl/internal/fielderr"
)

// IdentityArgs are a new client identity as an operator gives it: the
// settings of dprl agent nkey (seed-file, name). Create checks and
// creates it; the errors that are the operator's mistakes name the fields
// at fault (*fielderr.Error, IdentityFields).
type IdentityArgs struct {
	// SeedFile is the file to create with the identity's nkey seed
	// (required; never overwritten).
	SeedFile string `flag:"seed-file" usage:"file to create with the seed (mode 0600)"`
	// Name, if given, names the identity (ValidIdentityName): Create then
	// returns its clients file entry instead of the bare public key.
	Name string `flag:"name" usage:"identity name: print the --nats-clients entry"`
}

// IdentityFields are the fields the errors of IdentityArgs may name.
var IdentityFields = fielderr.Fields{"SeedFile", "Name"}

// Create creates the identity's key pair (NewIdentityKey) and returns its
// public key or, with Name, its entry (IdentityEntry). A missing SeedFile,
// an invalid Name and an existing SeedFile are *fielderr.Error; a failure
// to create the key or write the file is returned as it is.
func (a IdentityArgs) Create() (string, error) {
	if a.SeedFile == "" {
		return "", IdentityFields.Errorf("{SeedFile} is required")
	}
	if a.Name != "" && !ValidIdentityName(a.Name) {
		return "", IdentityFields.Errorf("{Name} %q: want 1 to 64 letters, digits, '-' or '_'", a.Name)
	}
	pub, err := NewIdentityKey(a.SeedFile)
	if errors.Is(err, fs.ErrExist) { // a seed is never overwritten
		return "", IdentityFields.Errorf("{SeedFile}: %w", err)
	} else if err != nil {
		return "", err
	}
	return IdentityEntry(pub, a.Name)
}
