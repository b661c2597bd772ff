// The authorization server of the gateway's OAuth tests: node's oidc-provider (OpenID
// Certified), on a free loopback port, issuing JWT access tokens for a resource indicator.
// Prints "READY <issuer>" once it listens. Usage: node provider.mjs
//
// Clients: "machine", "second" and "short" (client_credentials, secret "machine-secret-...",
// scopes "mcp:tools other"); "short"'s tokens live 3 seconds. Dynamic registration is on,
// with PKCE (the SDK client's flow); devInteractions logs anyone in and asks consent by forms.
//
// RFC 8693 token exchange, which oidc-provider does not ship, is registered here as a grant
// type of its own (provider.registerGrantType) for the client "exchanger" (same secret): a
// subject_token that is one of this provider's JWT access tokens (its signature, issuer and
// expiry checked) is exchanged for a JWT access token of the same subject meant for the
// audience asked for.
import http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import Provider from 'oidc-provider';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

const SCOPE = 'mcp:tools other';
const SECRET = 'machine-secret-0123456789abcdef0123456789abcdef';
const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      ...['machine', 'second', 'short'].map((id) => ({
        client_id: id,
        client_secret: SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: SCOPE,
      })),
      {
        client_id: 'exchanger',
        client_secret: SECRET,
        grant_types: [EXCHANGE],
        redirect_uris: [],
        response_types: [],
        scope: SCOPE,
      },
    ],
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
  const keys = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  provider.registerGrantType(EXCHANGE, async (ctx) => {
    const { subject_token: subject, subject_token_type: type, audience } = ctx.oidc.params;
    if (!subject || type !== ACCESS_TOKEN || !audience) {
      ctx.status = 400;
      ctx.body = { error: 'invalid_request' };
      return;
    }
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(subject, keys, { issuer }));
    } catch {
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant' };
      return;
    }
    const grant = new provider.Grant({ accountId: claims.sub, clientId: ctx.oidc.client.clientId });
    grant.addResourceScope(audience, 'mcp:tools');
    const token = new provider.AccessToken({
      accountId: claims.sub,
      client: ctx.oidc.client,
      grantId: await grant.save(),
      gty: EXCHANGE,
      scope: 'mcp:tools',
    });
    token.resourceServer = new provider.ResourceServer(audience, {
      scope: SCOPE,
      audience,
      accessTokenTTL: 600,
      accessTokenFormat: 'jwt',
    });
    ctx.body = {
      access_token: await token.save(),
      issued_token_type: ACCESS_TOKEN,
      token_type: 'Bearer',
      expires_in: token.expiration,
    };
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope']);
  provider.on('server_error', (ctx, error) => console.error('server_error', error));
  server.on('request', provider.callback());
  console.log(`READY ${issuer}`);
});
