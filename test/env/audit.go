package env

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// The main cluster's kube-apiserver keeps an audit log of every write
// (Metadata level: who, what, the answer; no bodies), so that tests can
// count the writes a component made, across restarts of kube-apiserver:
// it appends to the same file. Reads and the chatty writes of the control
// plane itself (Leases, Events, token and access reviews) are left out.

const (
	auditPolicyName = "audit-policy.yaml"
	auditLogName    = "kube-apiserver-audit.log"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
  - group: ""
    resources: ["events"]
  - group: events.k8s.io
  - group: authentication.k8s.io
  - group: authorization.k8s.io
- level: None
  nonResourceURLs: ["*"]
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`

// writeAuditPolicy writes the policy into dir and returns the flags that
// make kube-apiserver log to dir/logs/kube-apiserver-audit.log.
func writeAuditPolicy(dir string) ([]string, error) {
	policy := filepath.Join(dir, auditPolicyName)
	if err := writeFileAtomic(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + filepath.Join(dir, "logs", auditLogName),
		"--audit-log-format=json",
		// Every event reaches the file before the answer leaves: none is
		// lost when kube-apiserver is stopped.
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0",
	}, nil
}

// AuditLogPath is the main cluster's audit log.
func (e *Env) AuditLogPath() string { return filepath.Join(e.Dir, "logs", auditLogName) }

// AuditEvents reads the audit log from byte offset from (0: the start)
// and returns its events and the offset to read on from: a last line still
// being written is left for the next read.
func (e *Env) AuditEvents(from int64) ([]auditv1.Event, int64, error) {
	return readAuditLog(e.AuditLogPath(), from)
}

func readAuditLog(path string, from int64) ([]auditv1.Event, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, from, nil
	}
	if err != nil {
		return nil, from, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, from, fmt.Errorf("reading the audit log: %w", err)
	}
	var events []auditv1.Event
	r := bufio.NewReader(f)
	offset := from
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			// EOF: a line without its newline is still being written.
			return events, offset, nil
		}
		offset += int64(len(line))
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, from, fmt.Errorf("audit log %s at byte %d: %w", path, offset-int64(len(line)), err)
		}
		events = append(events, ev)
	}
}

// IsDryRun tells whether an audited request was a dry run (nothing was
// written).
func IsDryRun(ev auditv1.Event) bool {
	return strings.Contains(ev.RequestURI, "dryRun=All")
}
