// The authorization server of the gateway's OAuth tests: node's oidc-provider (OpenID
// Certified), on a free loopback port, issuing JWT access tokens for a resource indicator.
// Prints "READY <issuer>" once it listens. Usage: node provider.mjs
//
// Clients: "machine" and "short" (client_credentials, secret "machine-secret-...", scopes
// "mcp:tools other"); "short"'s tokens live 3 seconds. Dynamic registration is on,
// with PKCE (the SDK client's flow); devInteractions logs anyone in and asks consent by forms.
import http from 'node:http';
import Provider from 'oidc-provider';

const SCOPE = 'mcp:tools other';
const SECRET = 'machine-secret-0123456789abcdef0123456789abcdef';
const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: ['machine', 'short'].map((id) => ({
      client_id: id,
      client_secret: SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      scope: SCOPE,
    })),
    scopes: ['openid', 'offline_access', 'mcp:tools', 'other'],
    features: {
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator, client) => ({
          scope: SCOPE,
          audience: resourceIndicator,
          accessTokenTTL: client.clientId === 'short' ? 3 : 600,
          accessTokenFormat: 'jwt',
        }),
      },
    },
    ttl: {
      AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
      ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? 600,
    },
  });
  provider.on('server_error', (ctx, error) => console.error('server_error', error));
  server.on('request', provider.callback());
  console.log(`READY ${issuer}`);
});
