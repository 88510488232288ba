//go:build !linux

package e2e

import "errors"

var errNotLinux = errors.New("needs Linux (/proc, setfsuid)")

func listeningTCPPorts(int) ([]int, error) { return nil, errNotLinux }

func dialUnixAs(int, string) error { return errNotLinux }
