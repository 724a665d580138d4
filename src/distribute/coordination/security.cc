// Where the coordination service's token and TLS files come from, how every call carries the token and
// how the service checks it (in constant time), and the gRPC credentials TLS needs.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "coordination-impl.h"
#include "lockstep/core/error.h"
#include "lockstep/core/logging.h"

namespace lockstep::distribute {

namespace {

constexpr size_t kMaxTokenBytes = 4096;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// The whole of a small text file; `what` names it in errors ("the cluster token file").
std::string read_small_file(const std::string& path, const std::string& what, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  LS_CHECK(in, ValueError, what, " '", path, "' cannot be read (", std::strerror(errno),
           "): give an existing readable file");
  std::string text(limit + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  LS_CHECK(text.size() <= limit, ValueError, what, " '", path, "' is over ", limit, " bytes: is it the right file?");
  return text;
}

}  // namespace

ClusterSecurity load_cluster_security(ClusterSecurityFiles files) {
  ClusterSecurity s;
  s.tls_cert_file = env_or("LOCKSTEP_TLS_CERT_FILE", files.tls_cert_file);
  s.tls_key_file = env_or("LOCKSTEP_TLS_KEY_FILE", files.tls_key_file);
  s.tls_ca_file = env_or("LOCKSTEP_TLS_CA_FILE", files.tls_ca_file);
  const std::string bind_all = env_or("LOCKSTEP_BIND_ALL_INTERFACES", "0");
  LS_CHECK(bind_all == "0" || bind_all == "1", ValueError, "LOCKSTEP_BIND_ALL_INTERFACES='",
           bind_all.substr(0, 20), "' is not 0 or 1: set it to 1 to listen on every interface, or unset it");
  s.bind_all_interfaces = bind_all == "1";
  if (const char* token = std::getenv("LOCKSTEP_CLUSTER_TOKEN"); token && *token) {
    s.token = token;
    LS_CHECK(s.token.size() <= kMaxTokenBytes, ValueError, "LOCKSTEP_CLUSTER_TOKEN is over ", kMaxTokenBytes,
             " bytes: use a shorter secret (32 random bytes are plenty)");
    return s;
  }
  const std::string path = env_or("LOCKSTEP_CLUSTER_TOKEN_FILE", files.cluster_token_file);
  if (path.empty()) return s;
  std::string token = read_small_file(path, "the cluster token file", kMaxTokenBytes);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  LS_CHECK(!token.empty(), ValueError, "the cluster token file '", path,
           "' is empty: write the job's secret into it (e.g. openssl rand -hex 32 > ", path, ")");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
    log(LogLevel::warning, "the cluster token file '", path, "' is readable by other users: chmod 600 it");
  s.token = std::move(token);
  return s;
}

void add_cluster_token(grpc::ClientContext& ctx, const ClusterSecurity& security) {
  if (!security.token.empty()) ctx.AddMetadata(std::string(kTokenMetadata), security.token);
}

bool token_matches(const grpc::ServerContext& ctx, const std::string& token) {
  if (token.empty()) return true;
  const auto& metadata = ctx.client_metadata();
  const auto found = metadata.find(kTokenMetadata);
  if (found == metadata.end()) return false;
  const grpc::string_ref given = found->second;
  // Constant time in the token's content: every byte is compared whatever the first difference.
  unsigned char difference = given.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i)
    difference |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given.data()[i] : 0));
  return difference == 0;
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const ClusterSecurity& security) {
  if (!security.tls()) return grpc::InsecureServerCredentials();
  LS_CHECK(!security.tls_cert_file.empty() && !security.tls_key_file.empty(), ValueError,
           "TLS for the coordination service needs the chief's certificate and key: set LOCKSTEP_TLS_CERT_FILE "
           "and LOCKSTEP_TLS_KEY_FILE (or tls_cert_file and tls_key_file in TF_CONFIG's environment)");
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({read_small_file(security.tls_key_file, "the TLS key file", 1 << 20),
                                        read_small_file(security.tls_cert_file, "the TLS certificate file", 1 << 20)});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const ClusterSecurity& security) {
  if (!security.tls()) return grpc::InsecureChannelCredentials();
  // Without a CA file the chief's certificate is trusted itself (self-signed): name the file actually read.
  const bool own_ca = !security.tls_ca_file.empty();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = read_small_file(own_ca ? security.tls_ca_file : security.tls_cert_file,
                                           own_ca ? "the TLS CA file" : "the TLS certificate file", 1 << 20);
  return grpc::SslCredentials(options);
}

}  // namespace lockstep::distribute
