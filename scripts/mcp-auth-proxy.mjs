// A forwarding proxy for the MCP conformance suite, whose server mode cannot send credentials:
// every request to 127.0.0.1:LISTEN_PORT goes to TARGET (host:port) unchanged, Host header
// included (so the server's DNS-rebinding guard sees what the suite sent), with
// `Authorization: Bearer $MCP_TOKEN` added to requests for /mcp that carry none and are not
// marked `X-Proxy-No-Key: 1` (the OAuth test's client, which must meet the 401 challenge; the mark
// is removed). Other paths (OAuth endpoints, console pages, audio links) pass unchanged.
// Responses, event streams included, are streamed back as they come. Used only by
// scripts/mcp-test.sh.
import http from "node:http";

const [listenPort, target] = process.argv.slice(2);
const [targetHost, targetPort] = target.split(":");
const token = process.env.MCP_TOKEN;

const server = http.createServer((req, res) => {
  const headers = { ...req.headers };
  const noKey = headers["x-proxy-no-key"] === "1";
  delete headers["x-proxy-no-key"];
  const mcp = req.url === "/mcp" || req.url.startsWith("/mcp?");
  if (mcp && !headers.authorization && !noKey) headers.authorization = `Bearer ${token}`;
  const upstream = http.request(
    { host: targetHost, port: Number(targetPort), method: req.method, path: req.url, headers },
    (reply) => {
      res.writeHead(reply.statusCode, reply.headers);
      reply.pipe(res);
    },
  );
  upstream.on("error", () => {
    res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.listen(Number(listenPort), "127.0.0.1");
