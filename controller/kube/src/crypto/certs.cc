// OpenSSL-backed self-signed CA and serving certificate (kube/certs.h).
#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <string>

#include "tephra/kube/certs.h"

namespace tephra::kube {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(ASN1_INTEGER* p) const { ASN1_INTEGER_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

std::string BioText(BIO* b) {
  char* mem = nullptr;
  long len = BIO_get_mem_data(b, &mem);
  return std::string(mem, static_cast<size_t>(len));
}

core::StatusOr<std::string> KeyPem(EVP_PKEY* k) {
  Bio b(BIO_new(BIO_s_mem()));
  if (!b || PEM_write_bio_PrivateKey(b.get(), k, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return core::InternalError("encoding a private key failed");
  return BioText(b.get());
}

core::StatusOr<std::string> CertPem(X509* c) {
  Bio b(BIO_new(BIO_s_mem()));
  if (!b || PEM_write_bio_X509(b.get(), c) != 1) return core::InternalError("encoding a certificate failed");
  return BioText(b.get());
}

bool AddExt(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

// A certificate for `key`, issued by `issuer` (itself when null) signed with `issuer_key`.
core::StatusOr<Cert> MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                              std::chrono::seconds validity, bool is_ca, const std::string& san) {
  Cert cert(X509_new());
  if (!cert) return core::InternalError("X509_new failed");
  X509_set_version(cert.get(), 2);  // v3
  // A random 127-bit serial: browsers and Go reject repeated serials from one issuer.
  std::unique_ptr<BIGNUM, Free> bn(BN_new());
  std::unique_ptr<ASN1_INTEGER, Free> serial;
  if (!bn || BN_rand(bn.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !(serial.reset(BN_to_ASN1_INTEGER(bn.get(), nullptr)), serial) ||
      X509_set_serialNumber(cert.get(), serial.get()) != 1)
    return core::InternalError("making a certificate serial failed");
  // Valid from an hour ago: the API server's clock may be a little behind ours.
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(validity.count()));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* iss = issuer ? issuer : cert.get();
  bool ok = true;
  if (is_ca) {
    ok = ok && AddExt(cert.get(), iss, NID_basic_constraints, "critical,CA:TRUE");
    ok = ok && AddExt(cert.get(), iss, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  } else {
    ok = ok && AddExt(cert.get(), iss, NID_basic_constraints, "critical,CA:FALSE");
    ok = ok && AddExt(cert.get(), iss, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    ok = ok && AddExt(cert.get(), iss, NID_ext_key_usage, "serverAuth");
    if (!san.empty()) ok = ok && AddExt(cert.get(), iss, NID_subject_alt_name, san);
  }
  ok = ok && AddExt(cert.get(), iss, NID_subject_key_identifier, "hash");
  if (!ok) return core::InternalError("adding certificate extensions failed");
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) return core::InternalError("signing a certificate failed");
  return cert;
}

core::StatusOr<std::string> SubjectAltNames(const CertificateRequest& req) {
  std::string san;
  for (const auto& d : req.dns_names) san += (san.empty() ? "" : ",") + std::string("DNS:") + d;
  for (const auto& ip : req.ip_addresses) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip.c_str(), buf) != 1 && inet_pton(AF_INET6, ip.c_str(), buf) != 1)
      return core::InvalidArgumentError("\"" + ip + "\" is not an IP address");
    san += (san.empty() ? "" : ",") + std::string("IP:") + ip;
  }
  return san;
}

}  // namespace

core::StatusOr<CertificateBundle> RenewServingCertificate(const CertificateBundle& ca, const CertificateRequest& req) {
  TEPHRA_ASSIGN_OR_RETURN(std::string san, SubjectAltNames(req));
  Bio cb(BIO_new_mem_buf(ca.ca_cert_pem.data(), static_cast<int>(ca.ca_cert_pem.size())));
  Cert ca_cert(cb ? PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!ca_cert) return core::InvalidArgumentError("the CA certificate is not a PEM certificate");
  Bio kb(BIO_new_mem_buf(ca.ca_key_pem.data(), static_cast<int>(ca.ca_key_pem.size())));
  Pkey ca_key(kb ? PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!ca_key) return core::InvalidArgumentError("the CA key is not a PEM private key");
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1)
    return core::InvalidArgumentError("the CA key does not match the CA certificate");
  Pkey key(EVP_EC_gen("P-256"));
  if (!key) return core::InternalError("EC key generation failed");
  auto cert = MakeCert(key.get(), req.common_name, ca_cert.get(), ca_key.get(), req.validity, false, san);
  if (!cert.ok()) return cert.status();
  CertificateBundle out;
  out.ca_cert_pem = ca.ca_cert_pem;
  out.ca_key_pem = ca.ca_key_pem;
  TEPHRA_ASSIGN_OR_RETURN(out.cert_pem, CertPem(cert->get()));
  TEPHRA_ASSIGN_OR_RETURN(out.key_pem, KeyPem(key.get()));
  return out;
}

core::StatusOr<CertificateBundle> GenerateServingCertificate(const CertificateRequest& req) {
  TEPHRA_ASSIGN_OR_RETURN(std::string san, SubjectAltNames(req));
  Pkey ca_key(EVP_EC_gen("P-256"));
  Pkey key(EVP_EC_gen("P-256"));
  if (!ca_key || !key) return core::InternalError("EC key generation failed");
  // The CA outlives the serving certificate, so a rotated serving pair keeps the same caBundle.
  auto ca = MakeCert(ca_key.get(), req.common_name + " CA", nullptr, ca_key.get(), req.validity * 10, true, "");
  if (!ca.ok()) return ca.status();
  auto cert = MakeCert(key.get(), req.common_name, ca->get(), ca_key.get(), req.validity, false, san);
  if (!cert.ok()) return cert.status();
  CertificateBundle out;
  TEPHRA_ASSIGN_OR_RETURN(out.ca_cert_pem, CertPem(ca->get()));
  TEPHRA_ASSIGN_OR_RETURN(out.ca_key_pem, KeyPem(ca_key.get()));
  TEPHRA_ASSIGN_OR_RETURN(out.cert_pem, CertPem(cert->get()));
  TEPHRA_ASSIGN_OR_RETURN(out.key_pem, KeyPem(key.get()));
  return out;
}

core::StatusOr<std::chrono::system_clock::time_point> CertificateNotAfter(const std::string& pem) {
  Bio b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(b ? PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!cert) return core::InvalidArgumentError("no PEM certificate found");
  struct tm tm {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1)
    return core::InvalidArgumentError("unreadable certificate notAfter");
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace tephra::kube
