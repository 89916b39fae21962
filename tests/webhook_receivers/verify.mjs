// Verifies fleetdesk's webhook deliveries with the standardwebhooks npm package, as a
// receiver would: reads [{secret, headers, body}] as JSON from the file named by its argument
// and prints {verified, refused} (refused: the signatures the package rejected, with why).
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = { verified: 0, refused: [] };
for (const c of cases) {
  try {
    new Webhook(c.secret).verify(c.body, c.headers);
    out.verified += 1;
  } catch (e) {
    out.refused.push(String(e.message ?? e));
  }
}
console.log(JSON.stringify(out));
