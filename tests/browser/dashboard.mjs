// The dashboard in Debian's Chromium, driven by Playwright (tests/integration/dashboard.rs seeds
// the server and passes what it seeded in FLEETDESK_DASHBOARD_PLAN). Each step says what it
// checks; the first failure ends the run with a non-zero exit. Every page is checked with
// axe-core (no serious or critical violation) and photographed at desktop and phone width.
import { chromium } from "playwright-core";
import { AxeBuilder } from "@axe-core/playwright";
import path from "node:path";

const plan = JSON.parse(process.env.FLEETDESK_DASHBOARD_PLAN);
const base = plan.base;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

function check(ok, what) {
  if (!ok) throw new Error(`failed: ${what}`);
  console.log(`ok: ${what}`);
}

const browser = await chromium.launch({
  executablePath: plan.chromium,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
  ],
});

const scriptErrors = [];

/// A fresh browser profile with its own cookies.
async function person() {
  const context = await browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  page.on("pageerror", (e) => scriptErrors.push(`${page.url()}: ${e}`));
  // The CSP allows no inline script or style: anything it blocks is a defect of the page.
  page.on("console", (m) => {
    if (m.type() === "error" && m.text().includes("Content Security Policy")) {
      scriptErrors.push(`${page.url()}: ${m.text()}`);
    }
  });
  return { context, page };
}

async function signIn(page, key, expectPath) {
  await page.goto(`${base}/dashboard/`);
  check(page.url().includes("/dashboard/sign-in"), "a page without a session goes to sign in");
  await page.getByLabel("Personal key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`**${expectPath}`);
  check(page.url().endsWith(expectPath), `signed in, on ${expectPath}`);
  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === "fleetdesk_session");
  check(session && session.httpOnly && session.sameSite === "Strict", "the session cookie is HttpOnly and SameSite=Strict");
  check(!cookies.some((c) => c.value.includes(key)), "the key itself is kept in no cookie");
  const stored = await page.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage));
  check(!stored.includes(key), "nor in the page's storage");
}

/// axe-core over the page as it stands: no serious or critical violation.
async function accessible(page, name) {
  const result = await new AxeBuilder({ page }).analyze();
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  for (const v of bad) {
    console.log(`axe ${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join("; ")})`);
  }
  const minor = result.violations.length - bad.length;
  check(bad.length === 0, `axe-core finds no serious violation on ${name} (${minor} minor)`);
}

/// Desktop and phone screenshots of the page; at phone width nothing is wider than the screen.
async function photograph(page, name) {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: path.join(plan.screenshots, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(overflow <= 0, `${name} fits a 390 px phone (${overflow} px too wide)`);
  await page.screenshot({ path: path.join(plan.screenshots, `${name}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/// Runs `act` (a click or key that submits a form) and waits for the page it leads to.
async function submitting(page, act) {
  await Promise.all([page.waitForEvent("framenavigated"), act()]);
  await page.waitForLoadState("load");
}

async function visit(page, url, name) {
  const res = await page.goto(`${base}${url}`);
  check(res.status() === 200, `${name} answers 200 (${res.status()})`);
  await accessible(page, name);
  await photograph(page, name);
}

// ------------------------------------------------------------------------------------------
// The first page weighs under 100 KB (what is transferred, media aside).
{
  const { context, page } = await person();
  let bytes = 0;
  page.on("response", async (r) => {
    if (!r.url().includes("/files/")) {
      try { bytes += (await r.body()).length; } catch { /* a redirect has no body */ }
    }
  });
  await page.goto(`${base}/dashboard/sign-in`);
  await accessible(page, "sign-in");
  await photograph(page, "sign-in");
  await page.getByLabel("Personal key").fill(plan.keys.agency);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/dashboard/today");
  await page.waitForLoadState("networkidle");
  console.log(`measured: sign-in and the first page transferred ${bytes} bytes besides media`);
  check(bytes < 100 * 1024, "the first page is under 100 KB of assets");
  await context.close();
}

// ------------------------------------------------------------------------------------------
// Agency: review with the keyboard, play a video, decide, confirm, read.
{
  const { context, page } = await person();
  await signIn(page, plan.keys.agency, "/dashboard/today");
  await visit(page, "/dashboard/today", "today");
  check(await page.getByRole("cell", { name: /TW-T001/ }).count() > 0, "today shows TW-T001's coverage");
  const row = page.locator("tr", { hasText: "TW-T001" });
  check((await row.locator("td").last().textContent()) === "1", "and its inventory: the post it keeps in stock");

  // The review queue: both posts with their media.
  const ranges = [];
  page.on("response", (r) => { if (r.url().includes("/files/") && r.status() === 206) ranges.push(r.url()); });
  await page.goto(`${base}/dashboard/review`);
  const imageCard = page.locator("article", { hasText: "New serum, first look." });
  const videoCard = page.locator("article", { hasText: "Unboxing the night mask." });
  check(await imageCard.count() === 1 && await videoCard.count() === 1, "the queue shows both posts");
  const img = imageCard.locator("img");
  await img.scrollIntoViewIfNeeded();
  await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await img.elementHandle());
  check(await img.getAttribute("alt") === "the serum bottle", "the image shows its thumbnail, described by its caption");
  const video = videoCard.locator("video");
  check((await video.getAttribute("poster") || "").includes("/thumb"), "the video has its poster");
  await video.scrollIntoViewIfNeeded();
  const played = await video.evaluate(async (v) => {
    v.muted = true;
    await v.play();
    await new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no progress: readyState ${v.readyState}, error ${v.error && v.error.code}`)), 15000);
      const tick = () => (v.currentTime >= 0.5 ? (clearTimeout(t), resolve()) : requestAnimationFrame(tick));
      tick();
    });
    return { time: v.currentTime, duration: v.duration };
  });
  check(played.time >= 0.5, `the video plays (at ${played.time.toFixed(2)} s of ${played.duration.toFixed(2)} s)`);
  check(ranges.length > 0, `the video came through HTTP Range (${ranges.length} partial answers)`);
  check(await page.locator("p.body[lang]").count() >= 2, "post bodies keep their own language");
  await accessible(page, "review");
  await photograph(page, "review");

  // j selects the first post, a approves it.
  await page.keyboard.press("j");
  check(await imageCard.evaluate((el) => el.classList.contains("current")), "j selects the first post");
  await submitting(page, () => page.keyboard.press("a"));
  check(await page.getByRole("status").textContent() === "Approved.", "a approves it, and the page says so");
  check(await page.locator("article", { hasText: "New serum, first look." }).count() === 0, "the approved post left the queue");

  // A form post without the CSRF token, or with a wrong one, is refused.
  for (const form of [{ to: "approved", _idem: "forged-1" }, { to: "approved", _idem: "forged-2", _csrf: "A".repeat(43) }]) {
    const res = await page.request.post(`${base}/dashboard/act/posts/${plan.video_post}/transition`, { form, maxRedirects: 0 });
    check(res.status() === 403, `a post ${form._csrf ? "with another token" : "without a CSRF token"} is refused (${res.status()})`);
  }

  // s sends the selected post back: the comment field, then Enter.
  await page.goto(`${base}/dashboard/review`);
  await page.keyboard.press("j");
  check(await videoCard.evaluate((el) => el.classList.contains("current")), "j selects the video post, now first");
  await page.keyboard.press("s");
  await page.keyboard.type("Show the mask on the face first.");
  await submitting(page, () => page.keyboard.press("Enter"));
  check(await page.getByRole("status").textContent() === "Sent back.", "s and a comment send it back");

  // One post with its record.
  await visit(page, `/dashboard/posts/${plan.video_post}`, "post");
  check(await page.locator("table tbody tr").count() > 0, "the post's review record lists its entries");

  // Webhooks: the form that adds an endpoint, every event type to tick.
  await visit(page, "/dashboard/webhooks", "webhooks");
  check(await page.getByRole("button", { name: "Add the endpoint" }).count() === 1, "webhooks offers the form to add an endpoint");
  check(await page.getByRole("checkbox", { name: "post.published_differs" }).count() === 1, "and each event type to tick");

  // Decisions: the ban's two options, persona images as a grid.
  await visit(page, "/dashboard/decisions", "decisions");
  const ban = page.locator("article", { has: page.locator(`#decision-${plan.ban}`) });
  check(await ban.getByRole("button").count() === 2, "the ban offers its two options");
  await submitting(page, () => ban.getByRole("button", { name: "open new generation" }).click());
  check((await page.getByRole("status").textContent()).startsWith("Chosen: open new generation"), "the ban is decided");
  const images = page.locator("article", { has: page.locator(`#decision-${plan.images}`) });
  const thumbs = images.locator(".grid-images img");
  check(await thumbs.count() === 2, "the persona images show as a grid");
  for (const t of await thumbs.all()) {
    await page.waitForFunction((el) => el.complete && el.naturalWidth > 0, await t.elementHandle());
  }
  const some = images.locator("form", { has: page.locator("input[name=option]") });
  await some.locator(`input[value="${plan.avatar_image}"]`).check();
  await some.getByLabel("New avatar (optional)").selectOption(plan.avatar_image);
  await submitting(page, () => some.getByRole("button", { name: "Approve the chosen" }).click());
  check((await page.getByRole("status").textContent()).startsWith("The chosen images are approved"), "some images are approved, with a new avatar");

  const pause = page.locator("article", { hasText: "CTR fell to 0.4%" });
  check(await pause.getByText(/of 50,000 TWD/).count() === 1, "an ad change shows the month's spend against the cap");
  check(await pause.locator("table tbody tr").count() > 0, "and the ad account's campaigns with their numbers");

  const nora = page.locator("article", { hasText: "Night-shift nurse who loves 保養." });
  check(await nora.getByText("calm, dry humour").count() === 1, "a new persona is shown with its fields");
  await submitting(page, () => nora.getByRole("button", { name: "Resolve" }).click());
  check(await page.getByRole("status").textContent() === "Resolved.", "and confirmed");

  const fact = page.locator("article", { hasText: "a grey cat named 默默" });
  await fact.getByText("The persona's facts").click();
  check(await fact.getByRole("cell", { name: "draft" }).count() >= 1, "a fact is decided next to the persona's facts");

  // Personas: the list, and one persona with its facts, images and cast.
  await visit(page, "/dashboard/personas", "personas");
  check(await page.getByRole("link", { name: "Mia" }).count() === 1, "the personas list Mia");
  await visit(page, `/dashboard/personas/${plan.persona}`, "persona");
  check(await page.getByRole("cell", { name: "a grey cat named 默默" }).count() === 1, "the persona's draft fact is listed");
  check(await page.locator(".grid-images figure").count() === 2 && await page.locator(".grid-images img").count() === 1,
    "the persona's images are listed with their locks, the refused one without its picture");

  // The knowledge base: search in the other script, read the entry.
  await page.goto(`${base}/dashboard/knowledge`);
  await page.getByLabel(/^Search/).fill("猫咪");
  await submitting(page, () => page.getByRole("button", { name: "Search" }).click());
  check(await page.getByRole("link", { name: "貓咪的照顧" }).count() === 1, "a search in simplified Chinese finds the traditional entry");
  await accessible(page, "knowledge");
  await photograph(page, "knowledge");
  await submitting(page, () => page.getByRole("link", { name: "貓咪的照顧" }).click());
  check((await page.locator("p.body").textContent()) === "每天梳毛，貓咪會很開心。", "the entry reads as written");
  await accessible(page, "entry");
  await photograph(page, "entry");

  // Research: pick a card for an account.
  await visit(page, "/dashboard/research", "research");
  const found = page.locator("article", { hasText: "111111" });
  check(await page.locator(`datalist option[value="TW-T001"]`).count() === 1, "the workspace's account codes are suggested");
  await found.getByLabel("For the account").fill("TW-T001");
  await submitting(page, () => found.getByRole("button", { name: "Pick" }).click());
  check((await page.getByRole("status").textContent()).startsWith("Picked"), "a research card becomes a pick");

  // The task board: confirm the card, see the agents.
  await visit(page, "/dashboard/tasks", "tasks");
  const card = page.locator("article", { hasText: "Refresh the pinned post" });
  check(await card.getByText("Pinned the serum post.").count() === 1, "the card shows the agent's result");
  await submitting(page, () => card.getByRole("button", { name: "Confirm" }).click());
  check(await page.getByRole("status").textContent() === "Confirmed.", "the card is confirmed");
  const done = page.locator("section", { has: page.locator("#col-done") }).locator("article", { hasText: "Refresh the pinned post" });
  await done.getByText("Reopen", { exact: true }).first().click();
  await done.getByLabel("What still needs doing").fill("The pin moved back; pin it again.");
  await submitting(page, () => done.getByRole("button", { name: "Reopen" }).click());
  check(await page.getByRole("status").textContent() === "Reopened.", "a done card is reopened with what still needs doing");
  check(await page.getByRole("cell", { name: "op1" }).count() >= 1, "the agents' heartbeats and cron health are listed");

  // Community tickets: resolve the open one with a note; it leaves the open list.
  await visit(page, "/dashboard/tickets", "tickets");
  const leak = page.locator("article", { has: page.locator(`#ticket-${plan.ticket}`) });
  check(await leak.getByText("The serum leaked in the box.", { exact: false }).count() === 1, "the open ticket shows its summary");
  await leak.getByLabel("What was done").fill("Sent a new bottle; she is happy.");
  await submitting(page, () => leak.getByRole("button", { name: "Resolve" }).click());
  check(await page.getByRole("status").textContent() === "Resolved.", "the ticket is resolved with a note");
  check(await page.locator(`#ticket-${plan.ticket}`).count() === 0, "the resolved ticket left the open list");
  await page.getByLabel("Status").selectOption("resolved");
  await submitting(page, () => page.getByRole("button", { name: "Show" }).click());
  check(await page.getByText("Sent a new bottle; she is happy.", { exact: false }).count() === 1, "the resolved list shows the note");

  // Metrics and a report, as charts.
  await visit(page, "/dashboard/metrics", "metrics");
  check(await page.locator("svg.chart").count() === 3, "metrics draw views, posts and followers");
  const swatch = await page.locator(".legend i").first().evaluate((el) => getComputedStyle(el).backgroundColor);
  check(swatch === "rgb(31, 95, 191)", `the legend shows each line's colour (${swatch})`);
  check(await page.locator("svg.chart circle title", { hasText: "1,234" }).count() === 1, "the views reported are on the chart");
  await visit(page, "/dashboard/reports", "reports");
  await visit(page, `/dashboard/reports/${plan.report}`, "report");
  const bars = page.locator("svg.chart");
  check(await bars.count() === 1 && (await bars.textContent()).includes("1,234"), "the report charts each account's views");
  await submitting(page, () => page.getByRole("button", { name: "Issue to the client" }).click());
  check((await page.getByRole("status").textContent()).startsWith("Issued"), "the report is issued in one click");

  // An agency person is no platform admin.
  const keys = await page.goto(`${base}/dashboard/keys`);
  check(keys.status() === 403, "the keys page is refused to an agency person");
  check(await page.getByRole("alert").count() === 1, "inside the page, saying why");

  // Signing out ends the session.
  await submitting(page, () => page.getByRole("button", { name: "Sign out" }).click());
  await page.goto(`${base}/dashboard/review`);
  check(page.url().includes("/dashboard/sign-in"), "after signing out the pages ask to sign in");
  await context.close();
}

// ------------------------------------------------------------------------------------------
// A client sees only the client's queue.
{
  const { context, page } = await person();
  await signIn(page, plan.keys.client, "/dashboard/review");
  const cards = page.locator("article");
  check(await cards.count() === 1, `the client's queue holds one post (${await cards.count()})`);
  check(await cards.first().locator("p.body").textContent() === "保濕精華液，秋冬必備。", "in client review, its Chinese text as written");
  const glyphs = await cards.first().locator("p.body").evaluate((el) => {
    const r = document.createRange();
    r.selectNodeContents(el);
    return r.getBoundingClientRect().width;
  });
  check(glyphs > 100, `the Chinese text is drawn with glyphs (${glyphs.toFixed(0)} px wide)`);
  check(await page.getByRole("link", { name: "Decisions" }).count() === 0, "a client has no decisions link");
  await accessible(page, "client-review");
  await photograph(page, "client-review");
  const decisions = await page.goto(`${base}/dashboard/decisions`);
  check(decisions.status() === 403, "a client is refused the decisions");
  await context.close();
}

// ------------------------------------------------------------------------------------------
// A platform admin: the keys, never their values.
{
  const { context, page } = await person();
  await signIn(page, plan.keys.admin, "/dashboard/today");
  await visit(page, "/dashboard/keys", "keys");
  const html = await page.content();
  check(!Object.values(plan.keys).some((k) => html.includes(k)), "no key's value is on the page");
  check(await page.getByRole("button", { name: /^Revoke the key/ }).count() > 0, "every live key can be revoked");
  page.once("dialog", (d) => d.accept());
  const cid = page.locator("tr", { hasText: "Cid" });
  await submitting(page, () => cid.getByRole("button", { name: /^Revoke/ }).click());
  check(await page.getByRole("status").textContent() === "Revoked.", "the admin revokes a key after confirming");
  check(await page.locator("tr", { hasText: "Cid" }).getByText(/^revoked/).count() === 1, "the key shows as revoked");
  await context.close();
}

await browser.close();
check(scriptErrors.length === 0, `no page's script failed ${scriptErrors.join("; ")}`);
console.log("all dashboard checks passed");
