import { Client, Conflict } from "tokenvault";

const vault = new Client(".tokenvault/run/tokenvault.sock"); // or new Client() for $TOKENVAULT_SOCKET
await vault.put("payments/erin", "oauth2", { access_token: "at-4", refresh_token: "rt-4", expires_in: 3600 });
const token = await vault.token("payments/erin", { minTtl: 60 });
console.log(token.authorization); // Bearer at-4
for await (const credential of vault.listAll({ namespace: "payments" })) console.log(credential.id); // payments/erin
try {
  await vault.token("payments/erin", { minTtl: 86400 });
} catch (error) {
  if (!(error instanceof Conflict)) throw error;
  console.log(error.code); // min_ttl_unreachable
}
