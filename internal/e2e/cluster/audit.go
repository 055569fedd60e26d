package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// kube-apiserver counts requests only in aggregate (its metrics); to count
// the LIST and WATCH requests of one client, a cluster started with
// Options.Audit writes an audit log with one line per such request, at the
// moment the apiserver receives it. The log survives apiserver restarts.

// auditPolicy logs every list and watch request (metadata only) when it is
// received, and nothing else.
const auditPolicy = `{
  "apiVersion": "audit.k8s.io/v1",
  "kind": "Policy",
  "omitStages": ["ResponseStarted", "ResponseComplete", "Panic"],
  "rules": [
    {"level": "Metadata", "verbs": ["list", "watch"]},
    {"level": "None"}
  ]
}
`

// auditArgs writes the audit policy into the cluster's folder and returns
// the kube-apiserver flags that enable it. The log is written synchronously
// (mode blocking): an event is in the file before the request is served.
func (c *Cluster) auditArgs() ([]string, error) {
	policy := filepath.Join(c.dir, "audit-policy.json")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + c.auditLog(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0", // no rotation: one file for the whole run
	}, nil
}

func (c *Cluster) auditLog() string { return filepath.Join(c.dir, "audit.log") }

// AuditEvent is one LIST or WATCH request as the apiserver's audit log
// recorded it when the request arrived.
type AuditEvent struct {
	Verb       string    // "list" or "watch"
	RequestURI string    // path and query, as sent
	UserAgent  string    // the client's User-Agent header
	Username   string    // the authenticated user
	Received   time.Time // when the apiserver received the request
}

// AuditEvents returns the LIST and WATCH requests the apiserver has
// received so far, in order, across restarts. It fails unless the cluster
// was started with Options.Audit.
func (c *Cluster) AuditEvents() ([]AuditEvent, error) {
	if !c.opts.Audit {
		return nil, errors.New("AuditEvents: the cluster was started without Options.Audit")
	}
	data, err := os.ReadFile(c.auditLog())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	var out []AuditEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev struct {
			Verb       string `json:"verb"`
			RequestURI string `json:"requestURI"`
			UserAgent  string `json:"userAgent"`
			User       struct {
				Username string `json:"username"`
			} `json:"user"`
			Received time.Time `json:"requestReceivedTimestamp"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			// The apiserver may be writing the last line right now.
			continue
		}
		out = append(out, AuditEvent{
			Verb:       ev.Verb,
			RequestURI: ev.RequestURI,
			UserAgent:  ev.UserAgent,
			Username:   ev.User.Username,
			Received:   ev.Received,
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}
