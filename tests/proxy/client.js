// A node https client through the proxy: CONNECT, then TLS verified against $CA, then GET
// (or, with $BODY_B64_OF, a POST whose body is the base64 of 'x' and that text).
'use strict';
const http = require('http');
const https = require('https');
const net = require('net');
const tls = require('tls');
const fs = require('fs');

const url = new URL(process.argv[2]);
const [phost, pport] = process.env.PROXY.split(':');
const port = url.port || 443;
const ca = fs.readFileSync(process.env.CA);
const req = http.request({ host: phost, port: pport, method: 'CONNECT',
  path: `${url.hostname}:${port}`, headers: { Host: `${url.hostname}:${port}` } });
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) {
    console.log(`CONNECT ${res.statusCode}`);
    process.exit(1);
  }
  const opts = { socket, ca, host: url.hostname };
  if (!net.isIP(url.hostname))
    opts.servername = url.hostname;
  const conn = tls.connect(opts);
  const body = process.env.BODY_B64_OF === undefined ? null :
    `{"k":"${Buffer.from('x' + process.env.BODY_B64_OF).toString('base64')}"}`;
  const get = https.request({ host: url.hostname, port, path: url.pathname,
    method: body === null ? 'GET' : 'POST', createConnection: () => conn }, (r) => {
    let body = '';
    r.on('data', (d) => { body += d; });
    r.on('end', () => { console.log(`${r.statusCode} ${body}`); conn.end(); });
  });
  get.on('error', (e) => { console.log(`error ${e.message}`); process.exit(1); });
  get.end(body === null ? undefined : body);
});
req.on('error', (e) => { console.log(`error ${e.message}`); process.exit(1); });
req.end();
