package kubeconfigdiff

import (
	"bytes"
	"crypto/sha256"
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
		Spec       struct {
			Interactive bool `json:"interactive"`
			Cluster     *struct {
				Server                   string          `json:"server"`
				TLSServerName            string          `json:"tls-server-name"`
				InsecureSkipTLSVerify    bool            `json:"insecure-skip-tls-verify"`
				CertificateAuthorityData []byte          `json:"certificate-authority-data"`
				ProxyURL                 string          `json:"proxy-url"`
				DisableCompression       bool            `json:"disable-compression"`
				Config                   json.RawMessage `json:"config"`
			} `json:"cluster"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(os.Getenv("KUBERNETES_EXEC_INFO")), &info); err != nil || info.APIVersion == "" {
		info.APIVersion = "client.authentication.k8s.io/v1beta1"
	}
	status := map[string]string{}
	if tok := os.Getenv("KCDIFF_EXEC_TOKEN"); tok != "" {
		// What the plugin was told goes into the token, for the server
		// to record.
		tok += fmt.Sprintf("|interactive=%t", info.Spec.Interactive)
		if c := info.Spec.Cluster; c != nil {
			var config bytes.Buffer
			if len(c.Config) > 0 && string(c.Config) != "null" { // null or absent: none
				_ = json.Compact(&config, c.Config)
			}
			tok += fmt.Sprintf("|server=%s|tls-server-name=%s|insecure=%t|ca-sha256=%x|proxy=%s|disable-compression=%t|config=%s",
				c.Server, c.TLSServerName, c.InsecureSkipTLSVerify, sha256.Sum256(c.CertificateAuthorityData),
				c.ProxyURL, c.DisableCompression, config.String())
		}
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
