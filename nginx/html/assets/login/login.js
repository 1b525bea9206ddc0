// The login page: a pasted token is traded for the HttpOnly cookie (POST /login), then the app.
// A browser that already holds a good cookie (the redirect of GET /?token= from another site
// arrives here without it: SameSite=Strict) goes straight on to the app.
//
// GET /?token= that would replace another sign-in (another identity's cookie, or a link on
// another site, whose navigation carries no cookie) comes here as /login#token=<t>: the fragment
// reaches no server and no log. This page, the browser's own, sees who is signed in (GET /whoami
// carries the cookie) and asks before it replaces that sign-in: a link must not sign a browser
// in as someone else behind its user's back (login CSRF). Nobody signed in: it signs in at once.

const form = document.getElementById("login");
const input = document.getElementById("token");
const message = document.getElementById("message");
const confirmBox = document.getElementById("confirm");
const confirmText = document.getElementById("confirm-text");
const confirmYes = document.getElementById("confirm-yes");
const confirmNo = document.getElementById("confirm-no");

function say(text) {
  message.textContent = text;
}

// The token of a /login#token=<t> address, which is then taken out of the address bar.
function linkedToken() {
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  if (token !== null) history.replaceState(null, "", "/login" + location.search);
  return token;
}

// Who the browser is signed in as (its cookie), or null.
async function currentIdentity() {
  try {
    const res = await fetch("/whoami", { cache: "no-store" });
    if (res.status !== 200) return null;
    const who = await res.json();
    return typeof who.identity === "string" ? who.identity : null;
  } catch {
    return null;
  }
}

// POST /login: the cookie for token, then the app; otherwise the reason, and false.
async function trade(token) {
  try {
    const res = await fetch("/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token }),
      cache: "no-store",
    });
    if (res.ok) {
      location.replace("/");
      return true;
    }
    let data = null;
    try {
      data = await res.json();
    } catch {
      data = null;
    }
    say(data && data.error ? data.error : "sign-in failed (" + res.status + ")");
  } catch (e) {
    say("the server cannot be reached: " + e.message);
  }
  return false;
}

async function signIn(event) {
  event.preventDefault();
  const button = form.querySelector("button");
  button.disabled = true;
  say("");
  try {
    await trade(input.value.trim());
  } finally {
    button.disabled = false;
  }
}

// A token from a link: asks first when someone is signed in already.
async function fromLink(token) {
  const current = await currentIdentity();
  if (current === null) {
    await trade(token);
    return;
  }
  form.hidden = true;
  document.getElementById("intro").hidden = true;
  confirmText.textContent =
    "This browser is signed in as " + current + ". The link you followed signs it in with " +
    "another token instead. Use the link's token only if you trust where the link came from.";
  confirmBox.hidden = false;
  confirmYes.addEventListener("click", async () => {
    confirmYes.disabled = confirmNo.disabled = true;
    if (!(await trade(token))) confirmYes.disabled = confirmNo.disabled = false;
  });
  confirmNo.addEventListener("click", () => location.replace("/"));
}

form.addEventListener("submit", signIn);
const linked = linkedToken();
if (linked !== null) {
  fromLink(linked);
} else {
  if (new URLSearchParams(location.search).get("error") === "invalid_token")
    say("That token is not valid (unknown or revoked).");
  currentIdentity().then((who) => {
    if (who !== null) location.replace("/");
  });
}
