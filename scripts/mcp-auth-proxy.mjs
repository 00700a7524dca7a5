// A forwarding proxy for the MCP conformance suite, whose server mode cannot send credentials:
// every request to 127.0.0.1:LISTEN_PORT goes to TARGET (host:port) unchanged, Host header
// included (so the server's DNS-rebinding guard sees what the suite sent), with
// `Authorization: Bearer $MCP_TOKEN` added when the request carries none. Responses, event
// streams included, are streamed back as they come. Used only by scripts/mcp-test.sh.
import http from "node:http";

const [listenPort, target] = process.argv.slice(2);
const [targetHost, targetPort] = target.split(":");
const token = process.env.MCP_TOKEN;

const server = http.createServer((req, res) => {
  const headers = { ...req.headers };
  if (!headers.authorization) headers.authorization = `Bearer ${token}`;
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
