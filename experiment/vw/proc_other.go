//go:build !unix

package vw

import "os/exec"

// ownProcessGroup does nothing where process groups are not available.
func ownProcessGroup(*exec.Cmd) {}

// killGroup kills cmd's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
