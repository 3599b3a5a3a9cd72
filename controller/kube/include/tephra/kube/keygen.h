// SSH key generation for the job controller's ssh plugin.
//
// The interface lives in the runtime layer so that reconcilers (which may not include OpenSSL headers,
// see cmake/layering.cmake) can ask for a key pair; the OpenSSL implementation is in
// controller/kube/src/crypto/rsa_keygen.cc. Tests substitute a deterministic fake.
#pragma once

#include <memory>
#include <string>

#include "tephra/core/status.h"

namespace tephra::kube {

struct SshKeyPair {
  // PKCS#1 PEM ("-----BEGIN RSA PRIVATE KEY-----"), the format Volcano's ssh plugin writes to `id_rsa`.
  std::string private_pem;
  // One OpenSSH public key line: "ssh-rsa AAAA...\n" (`id_rsa.pub` and `authorized_keys`).
  std::string public_openssh;
};

// Thread-safe. Returns kInternal when the crypto library fails; never throws.
class KeyGenerator {
 public:
  virtual ~KeyGenerator() = default;
  virtual core::StatusOr<SshKeyPair> GenerateRsa(int bits) = 0;
};

using KeyGeneratorPtr = std::shared_ptr<KeyGenerator>;

// RSA key generation with OpenSSL 3 (EVP API).
KeyGeneratorPtr NewOpenSslKeyGenerator();

}  // namespace tephra::kube
