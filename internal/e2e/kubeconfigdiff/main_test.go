package kubeconfigdiff

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

// TestMain makes the test binary its own exec credential plugin: run with
// KCDIFF_EXEC_PLUGIN=1 (a kubeconfig's exec env sets it), it prints an
// ExecCredential and exits instead of running the tests.
func TestMain(m *testing.M) {
	if os.Getenv("KCDIFF_EXEC_PLUGIN") == "1" {
		os.Exit(execPlugin())
	}
	// Under -race, a binary that exits 0 waits a second for race reports
	// first; the plugin runs hundreds of times.
	if err := os.Setenv("GORACE", "atexit_sleep_ms=0 "+os.Getenv("GORACE")); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// execPlugin answers as a credential plugin: the token in
// KCDIFF_EXEC_TOKEN, and the client certificate and key in the files
// KCDIFF_EXEC_CERT and KCDIFF_EXEC_KEY name, if set. KCDIFF_EXEC_FAIL=1
// makes it fail. It speaks the apiVersion that KUBERNETES_EXEC_INFO asks
// for.
func execPlugin() int {
	if os.Getenv("KCDIFF_EXEC_FAIL") == "1" {
		fmt.Fprintln(os.Stderr, "kcdiff plugin: failing as asked")
		return 1
	}
	var info struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal([]byte(os.Getenv("KUBERNETES_EXEC_INFO")), &info); err != nil || info.APIVersion == "" {
		info.APIVersion = "client.authentication.k8s.io/v1beta1"
	}
	status := map[string]string{}
	if tok := os.Getenv("KCDIFF_EXEC_TOKEN"); tok != "" {
		status["token"] = tok
	}
	if f := os.Getenv("KCDIFF_EXEC_CERT"); f != "" {
		cert, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kcdiff plugin:", err)
			return 1
		}
		key, err := os.ReadFile(os.Getenv("KCDIFF_EXEC_KEY"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "kcdiff plugin:", err)
			return 1
		}
		status["clientCertificateData"], status["clientKeyData"] = string(cert), string(key)
	}
	out, _ := json.Marshal(map[string]any{
		"apiVersion": info.APIVersion,
		"kind":       "ExecCredential",
		"status":     status,
	})
	fmt.Println(string(out))
	return 0
}
