// Self-signed serving certificates for the roles that serve HTTPS to the API server (the admission webhook).
//
// When no certificate is mounted, `tephra webhook` makes its own CA and a serving certificate signed by it,
// writes both to files the HTTP server reads (kube/http_server.h re-reads them when they change), and puts the
// CA into its webhook configurations' caBundle. The interface is here, in the runtime layer, so that the
// webhook role (which may not include OpenSSL, see cmake/layering.cmake) can ask for a pair; OpenSSL is used
// only in controller/kube/src/crypto/.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "tephra/core/status.h"

namespace tephra::kube {

struct CertificateRequest {
  std::string common_name;               // also the CA's name with " CA" appended
  std::vector<std::string> dns_names;    // subjectAltName DNS entries ("tephra-webhook.ns.svc", "localhost")
  std::vector<std::string> ip_addresses; // subjectAltName IP entries ("127.0.0.1", "::1")
  std::chrono::seconds validity{std::chrono::hours(24 * 365)};
};

// PEM texts. Keys are ECDSA P-256 (PKCS#8): a handshake costs a fraction of an RSA-2048 one.
struct CertificateBundle {
  std::string ca_cert_pem, ca_key_pem;
  std::string cert_pem, key_pem;  // the serving pair, signed by the CA
};

// A new CA and a serving certificate for `req`. kInvalidArgument for an unparsable IP address, kInternal when
// the crypto library fails. Never throws.
core::StatusOr<CertificateBundle> GenerateServingCertificate(const CertificateRequest& req);

// A new serving pair for `req` signed by the CA of `ca` (its ca_cert_pem and ca_key_pem; the CA's own
// certificate is the first one in ca_cert_pem). Rotating the serving pair this way keeps the caBundle the
// API server trusts unchanged, so no request fails during a rotation. The result carries `ca`'s CA fields.
core::StatusOr<CertificateBundle> RenewServingCertificate(const CertificateBundle& ca, const CertificateRequest& req);

// The notAfter time of the first certificate in `pem`. kInvalidArgument when it holds no certificate.
core::StatusOr<std::chrono::system_clock::time_point> CertificateNotAfter(const std::string& pem);

}  // namespace tephra::kube
