package apisim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// serverName is the DNS name in the serving certificate besides 127.0.0.1.
const serverName = "localhost"

// CA is a self-signed certificate authority that can sign serving
// certificates for a TLS Server. It is safe for concurrent use.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// NewCA creates a fresh self-signed CA named name, valid for one day.
// Use it with Server.ServeWithCA to make the server present a certificate a
// client does not trust yet (wrong CA, CA rotation).
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("apisim: generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("apisim: self-sign CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("apisim: parse CA: %w", err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// PEM returns the CA certificate, PEM-encoded, for a client's trust bundle.
func (ca *CA) PEM() []byte { return append([]byte(nil), ca.pem...) }

// issue signs a serving certificate for 127.0.0.1 and serverName.
func (ca *CA) issue() (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("apisim: generate serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{serverName, "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("apisim: sign serving certificate: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// tlsState is the serving certificate, swappable while serving.
type tlsState struct {
	mu   sync.Mutex
	ca   *CA
	cert *tls.Certificate
}

func newTLSState() (*tlsState, error) {
	ca, err := NewCA("apisim-ca")
	if err != nil {
		return nil, err
	}
	cert, err := ca.issue()
	if err != nil {
		return nil, err
	}
	return &tlsState{ca: ca, cert: cert}, nil
}

func (t *tlsState) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cert, nil
}

func (t *tlsState) currentCA() *CA {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ca
}

// CA returns the authority that signed the certificate the server presents
// now; nil for a plain-HTTP server.
func (s *Server) CA() *CA {
	s.mu.Lock()
	st := s.tls
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.currentCA()
}

// CAPEM returns the PEM of CA(), for a kubeconfig's certificate-authority-data;
// nil for a plain-HTTP server.
func (s *Server) CAPEM() []byte {
	if ca := s.CA(); ca != nil {
		return ca.PEM()
	}
	return nil
}

// ServerName returns a DNS name the serving certificate is valid for
// ("localhost"); the certificate also covers the IP 127.0.0.1.
func (s *Server) ServerName() string { return serverName }

// ServeWithCA makes the server present, from the next TLS handshake on, a
// new serving certificate signed by ca. Connections already open keep the
// old one. Clients that trust only the previous CA then fail to connect
// (wrong CA); clients that trust both keep working (CA rotation).
func (s *Server) ServeWithCA(ca *CA) error {
	s.mu.Lock()
	st := s.tls
	s.mu.Unlock()
	if st == nil {
		return errors.New("apisim: ServeWithCA needs a server started with StartTLS")
	}
	cert, err := ca.issue()
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ca, st.cert = ca, cert
	return nil
}
