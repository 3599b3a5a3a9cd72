// POST support of kube::HttpServer (used by the scheduler extender API): body framing by Content-Length, the
// size limit, malformed requests, and method routing. Loopback sockets only; each test takes milliseconds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>

#include "tephra/kube/http_server.h"

namespace tephra::kube {
namespace {

// Sends `request` verbatim (optionally half-closing the write side), returns the whole response.
std::string Send(int port, const std::string& request, bool shutdown_write = false) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  size_t off = 0;
  while (off < request.size()) {
    ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (413) and close before reading everything
    off += static_cast<size_t>(n);
  }
  if (shutdown_write) ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}
std::string Body(const std::string& resp) {
  auto p = resp.find("\r\n\r\n");
  return p == std::string::npos ? "" : resp.substr(p + 4);
}
int Code(const std::string& resp) { return resp.size() >= 12 ? std::stoi(resp.substr(9, 3)) : 0; }
std::string Post(const std::string& path, const std::string& body, const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

class HttpServerPostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.HandlePost("/echo", [this](const ServerRequest& r) {
      ++calls_;
      return ServerResponse{200, "application/json", r.method + ":" + r.path + "?" + r.query + ":" + r.body};
    });
    server_.Handle("/get-only", [](const ServerRequest&) { return ServerResponse{200, "text/plain", "g"}; });
    server_.set_max_body_bytes(1000);
    ASSERT_TRUE(server_.Start("127.0.0.1:0").ok());
  }
  HttpServer server_;
  std::atomic<int> calls_{0};
};

TEST_F(HttpServerPostTest, DeliversTheBodyExactly) {
  auto r = Send(server_.port(), Post("/echo?x=1", R"({"a":1})"));
  EXPECT_EQ(Code(r), 200) << r;
  EXPECT_NE(r.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_EQ(Body(r), R"(POST:/echo?x=1:{"a":1})");
  // Header names are case-insensitive; an empty body is fine.
  r = Send(server_.port(), "POST /echo HTTP/1.1\r\ncontent-length: 0\r\n\r\n");
  EXPECT_EQ(Body(r), "POST:/echo?:");
}

TEST_F(HttpServerPostTest, BodyArrivingInPiecesAndBinaryBytes) {
  // A body larger than one read buffer of the head loop, with NUL and CRLF bytes inside.
  std::string body(900, 'x');
  body[10] = '\0';
  body.replace(100, 4, "\r\n\r\n");
  auto r = Send(server_.port(), Post("/echo", body));
  EXPECT_EQ(Code(r), 200);
  EXPECT_EQ(Body(r), "POST:/echo?:" + body);
}

TEST_F(HttpServerPostTest, ExpectContinueGetsAnInterimResponse) {
  // The client sends the head only, waits for 100 Continue, then the body (what curl does for large bodies).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server_.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string head = "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  char buf[256];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_EQ(::send(fd, "abc", 3, MSG_NOSIGNAL), 3);
  std::string out;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_EQ(Body(out), "POST:/echo?:abc");
}

TEST_F(HttpServerPostTest, OversizeBodyIs413WithoutCallingTheHandler) {
  auto r = Send(server_.port(), Post("/echo", std::string(1001, 'y')));
  EXPECT_EQ(Code(r), 413) << r;
  EXPECT_NE(r.find("Payload Too Large"), std::string::npos);
  EXPECT_NE(Body(r).find("1001 bytes exceeds the limit of 1000"), std::string::npos) << Body(r);
  EXPECT_EQ(calls_, 0);
  // At the limit is accepted.
  EXPECT_EQ(Code(Send(server_.port(), Post("/echo", std::string(1000, 'y')))), 200);
}

TEST_F(HttpServerPostTest, MalformedFramingIs400Or411) {
  auto bad_len = Send(server_.port(), "POST /echo HTTP/1.1\r\nContent-Length: 12abc\r\n\r\n");
  EXPECT_EQ(Code(bad_len), 400) << bad_len;
  EXPECT_NE(Body(bad_len).find("malformed Content-Length"), std::string::npos);
  EXPECT_EQ(Code(Send(server_.port(), "POST /echo HTTP/1.1\r\nContent-Length: -1\r\n\r\n")), 400);
  // The client promises 10 bytes, sends 3 and closes its side: 400, the handler never sees a truncated body.
  auto short_body = Send(server_.port(), "POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", true);
  EXPECT_EQ(Code(short_body), 400) << short_body;
  EXPECT_NE(Body(short_body).find("shorter than Content-Length"), std::string::npos);
  auto chunked = Send(server_.port(), "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  EXPECT_EQ(Code(chunked), 411) << chunked;
  EXPECT_EQ(calls_, 0);
  // Still serving.
  EXPECT_EQ(Code(Send(server_.port(), Post("/echo", "{}"))), 200);
}

TEST_F(HttpServerPostTest, MethodRouting) {
  // GET on a POST-only path and POST on a GET-only path: 405 (the path exists); unknown path: 404.
  EXPECT_EQ(Code(Send(server_.port(), "GET /echo HTTP/1.1\r\n\r\n")), 405);
  EXPECT_EQ(Code(Send(server_.port(), Post("/get-only", "{}"))), 405);
  EXPECT_EQ(Code(Send(server_.port(), Post("/nope", "{}"))), 404);
  EXPECT_EQ(Code(Send(server_.port(), "PUT /echo HTTP/1.1\r\nContent-Length: 0\r\n\r\n")), 405);
  EXPECT_EQ(Body(Send(server_.port(), "GET /get-only HTTP/1.1\r\n\r\n")), "g");
  EXPECT_EQ(calls_, 0);
}

}  // namespace
}  // namespace tephra::kube
