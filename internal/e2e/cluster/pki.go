package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Users of the static token file. The admin is in group system:masters,
// which RBAC lets do anything; the unprivileged user is authenticated but
// bound to no role, so it may do discovery and nothing else.
const (
	AdminUser        = "listwatch-admin"
	UnprivilegedUser = "listwatch-nobody"
)

// credentials is what writePKI produced: file paths for the apiserver and
// secrets for the clients.
type credentials struct {
	caPEM       []byte
	certFile    string // serving certificate, signed by the CA
	keyFile     string
	saPub       string // service-account verification key (RSA public)
	saKey       string // service-account signing key (RSA private)
	tokenFile   string // tokens.csv
	adminToken  string
	nobodyToken string
}

// writePKI creates, in dir, a CA, a serving certificate valid for 127.0.0.1,
// ::1 and localhost, a service-account RSA key pair and a static token file.
func writePKI(dir string) (credentials, error) {
	c := credentials{
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saPub:     filepath.Join(dir, "sa.pub"),
		saKey:     filepath.Join(dir, "sa.key"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("generating the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "listwatch-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("signing the CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), c.caPEM, 0o644); err != nil {
		return c, fmt.Errorf("writing the CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("generating the serving key: %w", err)
	}
	servingTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 96, 0, 1)},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTmpl, caCert, &servingKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("signing the serving certificate: %w", err)
	}
	if err := writePEM(c.certFile, "CERTIFICATE", servingDER); err != nil {
		return c, err
	}
	servingKeyDER, err := x509.MarshalECPrivateKey(servingKey)
	if err != nil {
		return c, fmt.Errorf("encoding the serving key: %w", err)
	}
	if err := writePEM(c.keyFile, "EC PRIVATE KEY", servingKeyDER); err != nil {
		return c, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return c, fmt.Errorf("generating the service-account key: %w", err)
	}
	if err := writePEM(c.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return c, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return c, fmt.Errorf("encoding the service-account public key: %w", err)
	}
	if err := writePEM(c.saPub, "PUBLIC KEY", saPubDER); err != nil {
		return c, err
	}

	if c.adminToken, err = randomToken(); err != nil {
		return c, err
	}
	if c.nobodyToken, err = randomToken(); err != nil {
		return c, err
	}
	tokens := fmt.Sprintf("%s,%s,uid-admin,\"system:masters\"\n%s,%s,uid-nobody\n",
		c.adminToken, AdminUser, c.nobodyToken, UnprivilegedUser)
	if err := os.WriteFile(c.tokenFile, []byte(tokens), 0o600); err != nil {
		return c, fmt.Errorf("writing the token file: %w", err)
	}
	return c, nil
}

// writePEM writes one PEM block to path, readable by its owner only.
func writePEM(path, typ string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// randomToken returns 32 random hex digits.
func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
