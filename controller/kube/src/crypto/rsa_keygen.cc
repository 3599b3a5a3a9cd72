// OpenSSL-backed KeyGenerator: RSA key, PKCS#1 PEM private key, OpenSSH "ssh-rsa" public line.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tephra/kube/keygen.h"

namespace tephra::kube {
namespace {

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct BnDeleter {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

void PutU32(std::vector<uint8_t>* out, uint32_t v) {
  out->push_back(static_cast<uint8_t>(v >> 24));
  out->push_back(static_cast<uint8_t>(v >> 16));
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v));
}

void PutString(std::vector<uint8_t>* out, const std::vector<uint8_t>& s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->insert(out->end(), s.begin(), s.end());
}

// SSH "mpint" (RFC 4251 section 5): big-endian two's complement, a leading zero byte when the top bit is set.
std::vector<uint8_t> Mpint(const BIGNUM* bn) {
  std::vector<uint8_t> bytes(static_cast<size_t>(BN_num_bytes(bn)));
  BN_bn2bin(bn, bytes.data());
  if (!bytes.empty() && (bytes[0] & 0x80)) bytes.insert(bytes.begin(), 0);
  return bytes;
}

std::string Base64(const std::vector<uint8_t>& data) {
  static constexpr char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += kTable[(v >> 6) & 63];
    out += kTable[v & 63];
  }
  if (i + 1 == data.size()) {
    uint32_t v = uint32_t{data[i]} << 16;
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == data.size()) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8);
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += kTable[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

class OpenSslKeyGenerator final : public KeyGenerator {
 public:
  core::StatusOr<SshKeyPair> GenerateRsa(int bits) override {
    if (bits < 1024 || bits > 16384) return core::InvalidArgumentError("unsupported RSA key size");
    std::unique_ptr<EVP_PKEY, PkeyDeleter> pkey(EVP_RSA_gen(static_cast<unsigned int>(bits)));
    if (!pkey) return core::InternalError("RSA key generation failed");

    // Private key: the "traditional" PEM of an RSA key is PKCS#1 ("BEGIN RSA PRIVATE KEY").
    std::unique_ptr<BIO, BioDeleter> bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PrivateKey_traditional(bio.get(), pkey.get(), nullptr, nullptr, 0, nullptr,
                                                     nullptr) != 1)
      return core::InternalError("encoding RSA private key failed");
    char* mem = nullptr;
    long len = BIO_get_mem_data(bio.get(), &mem);
    SshKeyPair out;
    out.private_pem.assign(mem, static_cast<size_t>(len));

    BIGNUM* n_raw = nullptr;
    BIGNUM* e_raw = nullptr;
    if (EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_N, &n_raw) != 1 ||
        EVP_PKEY_get_bn_param(pkey.get(), OSSL_PKEY_PARAM_RSA_E, &e_raw) != 1) {
      BN_free(n_raw);
      BN_free(e_raw);
      return core::InternalError("reading RSA public key failed");
    }
    std::unique_ptr<BIGNUM, BnDeleter> n(n_raw), e(e_raw);
    // OpenSSH wire format (RFC 4253 section 6.6): string "ssh-rsa", mpint e, mpint n.
    std::vector<uint8_t> blob;
    const std::string type = "ssh-rsa";
    PutString(&blob, std::vector<uint8_t>(type.begin(), type.end()));
    PutString(&blob, Mpint(e.get()));
    PutString(&blob, Mpint(n.get()));
    out.public_openssh = "ssh-rsa " + Base64(blob) + "\n";
    return out;
  }
};

}  // namespace

KeyGeneratorPtr NewOpenSslKeyGenerator() { return std::make_shared<OpenSslKeyGenerator>(); }

}  // namespace tephra::kube
