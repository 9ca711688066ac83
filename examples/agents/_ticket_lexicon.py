"""The ticket-triage agent's weighted phrase lists (data, no logic).

Each entry is ``"phrase": weight``. A phrase is matched on word tokens
(lower case, apostrophes kept: "can't"); a word ending in ``*`` matches any
token that starts with it ("charg*" matches charge, charged, charges). The
weights were set by hand on invented tickets: they are an honest baseline,
not a trained model.
"""

from __future__ import annotations

__all__ = [
    "BLOCKED",
    "CALM",
    "LABELS",
    "LIMITED",
    "NEGATORS",
    "PRODUCTS",
    "SECURITY_INCIDENT",
    "SOFT_OUTAGE",
    "STANDSTILL",
    "TIME_BOUND",
    "URGENCY",
]

Lexicon = dict[str, float]

# fmt: off
LABELS: dict[str, Lexicon] = {
    "billing": {
        "billing": 3, "billed": 2.5, "bill": 1.5, "charged": 2, "charge": 1.5, "charges": 1.5,
        "charged twice": 3, "double charged": 3.5, "overcharged": 3.5, "refund*": 3,
        "subscription": 2.5, "my plan": 2, "our plan": 2, "plan": 0.75, "pricing": 2, "price": 1,
        "downgrade": 2.5, "upgrade": 1, "card on file": 3, "payment method": 2.5,
        "credit card": 1.5, "card was declined": 2.5, "renewal": 2.5, "renew*": 1.5,
        "cancel my subscription": 3.5, "cancel our subscription": 3.5, "trial": 1.5,
        "coupon": 1, "proration": 3, "prorat*": 3, "your invoice": 2.5, "invoice from you": 3,
        "invoice from brightwave": 3.5, "brightwave invoice": 3, "receipt for": 1.5,
        "annual plan": 3, "monthly plan": 3, "vat number on": 1.5, "payment failed": 2.5,
        "failed payment": 2.5, "card expired": 2.5,
        "direct debit": 1.5, "money back": 3, "paid for": 1.5, "seat*": 1, "add-on": 1.5,
        "addon": 1.5, "licence fee": 2.5, "license fee": 2.5, "fee": 1.5, "fees": 1.5,
        "identical payments": 3, "on our statement": 2.5, "bounced": 2, "unpaid": 2,
        "hardware charge": 2.5, "pro-rata": 2.5, "pro rata": 2.5, "credit the difference": 2.5,
    },
    "bug": {
        "bug": 3, "error": 2, "errors": 2, "error message": 2.5, "crash*": 3, "broken": 2,
        "doesn't work": 2, "does not work": 2, "not working": 2, "stopped working": 2.5,
        "wrong": 1.5, "incorrect*": 2, "fails": 1.5, "failing": 1.5, "failed": 1,
        "exception": 2, "stack trace": 3, "glitch": 2.5, "freez*": 2, "frozen": 2, "stuck": 1.5,
        "blank page": 2.5, "blank screen": 2.5, "unexpected*": 1.5, "duplicat*": 1.5,
        "disappear*": 2, "missing": 1, "since the update": 2.5, "after the update": 2.5,
        "latest update": 2, "since the latest release": 2.5, "regression": 3,
        "reproduce": 2.5, "steps to reproduce": 3.5, "rounding": 2, "miscalculat*": 3,
        "calculates": 1.5, "calculated": 1.5, "shows the wrong": 2.5, "won't save": 2.5,
        "doesn't save": 2.5, "not saving": 2.5, "greyed out": 2, "grayed out": 2,
        "nothing happens": 2.5, "spinning": 1.5, "keeps": 1, "randomly": 1.5, "blank": 1.5,
        "typo": 2, "instead of": 1.5, "never arrive*": 2, "received nothing": 2,
        "did something change": 2.5, "no longer": 1.5, "stopped": 1, "used to work": 3,
        "doesn't match": 2, "don't match": 2, "double count*": 2.5,
        "gives error": 3, "gives an error": 3, "fails with": 2.5, "error code": 2.5,
        "internal server error": 3, "http 500": 2.5, "shows up twice": 2.5, "show up twice": 2.5,
        "appears twice": 2.5, "appear twice": 2.5, "twice": 0.75, "is missing the": 2,
        "not deducted": 2.5, "happens on": 1.5, "every time": 1.5,
    },
    "feature_request": {
        "feature request": 4, "would be nice": 3, "would be great": 3, "would love": 2.5,
        "it would help": 2.5, "please add": 3, "add support": 3, "add an option": 3,
        "could you add": 3, "can you add": 3, "could you please add": 3, "wish": 2,
        "suggest*": 1.5, "roadmap": 3, "any plans": 3, "plans to support": 3,
        "plan to support": 3, "support for": 1.5, "integration with": 2, "integrate with": 2,
        "dark mode": 3, "ability to": 2.5, "option to": 2, "feature": 1.5,
        "missing feature": 3, "enhancement": 3, "improvement": 2, "vote for": 2.5,
        "request": 1, "idea": 2, "consider adding": 3.5, "be able to": 1.5, "allow us to": 2,
        "allow users to": 2, "planning to": 2, "are you planning": 3,
        "be added": 2, "great addition": 3, "save us time": 2.5, "beta test": 3,
        "considering it": 2, "would like to see": 2.5, "it would be useful": 3,
    },
    "account": {
        "password": 2.5, "reset my password": 3, "password reset": 3, "forgot": 2,
        "log in": 1.5, "login": 1.5, "log into": 1.5, "sign in": 1.5, "signing in": 1.5,
        "locked out": 3.5, "two factor": 2.5, "2fa": 3, "authenticator": 2.5,
        "verification code": 2, "username": 2, "email address": 1.5, "change my email": 3,
        "update my email": 3, "delete my account": 3.5, "close my account": 3.5,
        "close our account": 3.5, "account": 1, "profile": 1.5, "permission*": 2, "role": 1.5,
        "invite": 2, "invitation": 2, "add a user": 2.5, "remove a user": 2.5,
        "new user": 2, "user access": 2, "owner": 1.5, "transfer ownership": 3.5, "sso": 2,
        "single sign on": 2.5, "deactivate": 2, "accountant access": 3, "admin rights": 2.5,
        "new phone": 2, "lost my phone": 2.5, "merge": 1.5, "access": 1,
        "read-only": 3, "add users": 2.5, "how many users": 2.5, "close our": 2,
        "sold the business": 2.5, "unlock link": 3, "account is locked": 3.5, "locked": 2,
        "too many attempts": 3,
    },
    "outage": {
        "is down": 3.5, "are down": 3.5, "site down": 3.5, "went down": 3, "goes down": 2.5,
        "down for": 2.5, "completely down": 3.5, "totally down": 3.5, "down again": 3.5,
        "outage": 4, "unavailable": 3, "not loading": 2, "won't load": 2, "can't reach": 2.5,
        "cannot reach": 2.5, "unreachable": 3, "timing out": 2, "times out": 2,
        "timeout": 1.5, "502": 3, "503": 3, "504": 2.5, "bad gateway": 3.5,
        "service unavailable": 4, "status page": 2.5, "all our stores": 2.5,
        "all of our stores": 2.5, "all users": 2, "everyone": 1.5, "nobody can": 2.5,
        "no one can": 2.5, "none of our": 2, "whole team": 1.5, "entire team": 1.5,
        "degraded": 3, "extremely slow": 2.5, "very slow": 1.5, "is it down": 3.5,
        "anyone else": 2, "since this morning": 1, "for the last hour": 1.5,
        "connection refused": 2.5, "not responding": 2.5, "can't connect": 2,
        "cannot connect": 2, "unable to connect": 2, "all devices": 2, "every device": 2,
        "standstill": 3, "offline": 2, "none of the": 2, "for all visitors": 2.5,
        "barely loading": 3, "takes ages": 2, "everyone is affected": 2.5,
        "all our users are affected": 2.5, "same for all our users": 2.5,
        "having problems": 2, "wrong on your side": 3, "on your side": 1.5,
        "what's going on": 2,
    },
    "how_to": {
        "how do i": 4.5, "how can i": 3.5, "how to": 3, "how do we": 4.5, "how can we": 3.5,
        "is it possible": 2, "is there a way": 2.5, "where can i": 3, "where do i": 3,
        "where is the": 2, "what is the best way": 3, "best way to": 2.5, "instructions": 2,
        "guide": 2, "tutorial": 2.5, "documentation": 1.5, "docs": 1.5, "step by step": 2,
        "set up": 1.5, "setup": 1.5, "configure": 1.5, "question": 1.5, "wondering": 2,
        "explain": 2, "walk me through": 3.5, "show me how": 3.5, "can i": 1, "do i need to": 2,
        "what does": 1.5, "what's the difference": 3, "difference between": 2.5,
    },
    "security": {
        "hacked": 4.5, "compromised": 4.5, "breach": 4.5, "phishing": 4.5, "suspicious": 3,
        "unauthori*": 4, "vulnerability": 4.5, "vulnerabilities": 4.5, "xss": 4.5,
        "sql injection": 4.5, "csrf": 4.5, "exploit*": 3.5, "cve": 4.5, "security": 2.5,
        "leak*": 3, "exposed": 2.5, "data exposure": 4.5, "malware": 4.5, "fraud*": 3,
        "someone logged in": 4, "logged into my account": 2, "login from": 2.5,
        "unknown device": 3.5, "unknown location": 3.5, "not me": 2.5, "wasn't me": 3,
        "stolen": 3.5, "responsible disclosure": 5, "bug bounty": 5, "pentest": 3.5,
        "penetration test": 3.5, "spoof*": 3, "scam": 3, "impersonat*": 3.5,
        "didn't make": 1.5, "didn't authorise": 3.5, "didn't authorize": 3.5, "idor": 4.5,
        "other customers' data": 4, "someone else's data": 4, "another company's": 3,
        "card data": 3, "fake": 3, "login link": 2.5, "login alert": 3.5,
        "another country": 3, "active attack": 5, "at risk": 2.5, "someone is using": 3,
        "don't know": 1, "changed our bank details": 3, "can see other": 3.5,
        "can see others": 3.5, "other people's": 2.5, "colleague's": 2,
    },
    "other": {
        "partnership": 3, "partner": 2, "reseller": 3, "press": 2, "journalist": 3,
        "career*": 2.5, "job opening": 3, "thank you": 1, "thanks for": 1, "great job": 2.5,
        "love the": 1.5, "compliment": 2.5, "kudos": 2.5, "sales team": 2, "demo": 2,
        "interview": 2, "unsubscribe": 2.5, "newsletter": 2, "conference": 2.5,
        "sponsor*": 2.5, "marketing": 1.5, "seo services": 4, "guest post": 4, "podcast": 3,
        "webinar": 2, "survey": 1.5, "award": 2, "testimonial": 2.5, "affiliate": 2.5,
        "from sales": 3, "programme": 1.5, "program": 1,
    },
}

PRODUCTS: dict[str, Lexicon] = {
    "books": {
        "brightwave books": 5, "books": 2.5, "bookkeeping": 3, "accounting": 2.5, "accountant": 1.5,
        "ledger*": 3, "journal": 2, "journal entry": 3, "bank feed*": 3.5, "reconcil*": 3,
        "vat return": 3.5, "tax return": 2, "chart of accounts": 3.5, "quote": 1.5,
        "quotes": 1.5, "estimate*": 1.5, "credit note*": 3, "expense*": 2, "balance sheet": 3,
        "profit and loss": 3, "invoice template": 3, "invoice reminder*": 3,
        "customer invoices": 2.5, "sending invoices": 2.5, "send invoices": 2.5,
        "overdue invoices": 2.5, "mtd": 2.5, "making tax digital": 3.5, "purchase order*": 2,
        "bills to pay": 2.5, "supplier bills": 3, "year end": 2, "trial balance": 3.5,
        "bank transactions": 2.5, "bank account": 1, "invoices": 0.75, "invoice": 0.5,
        "recurring": 1.5, "retainer": 2, "my customer": 1.5, "payment link": 1.5,
    },
    "payroll": {
        "brightwave payroll": 5, "payroll": 4, "payslip*": 3.5, "pay slip*": 3.5,
        "salary": 3, "salaries": 3, "wages": 3, "pay run*": 3.5, "payrun": 3.5,
        "employee*": 2, "staff": 1, "pension*": 3, "p60": 3, "p45": 3, "w2": 3, "1099": 2.5,
        "timesheet*": 2.5, "overtime": 2.5, "holiday pay": 3, "sick pay": 3, "paye": 3,
        "hmrc": 1.5, "rti": 2, "tax code": 2.5, "direct deposit": 3, "paycheck*": 3,
        "pay stub*": 3, "net pay": 3, "gross pay": 3, "deduction*": 2, "payday": 2.5,
        "pay day": 2.5, "contractor*": 1.5, "new hire": 2.5, "pay our staff": 3.5,
    },
    "shop": {
        "brightwave shop": 5, "online store": 4, "online shop": 4, "storefront": 4,
        "store front": 4, "webshop": 4, "web shop": 4, "website": 1.5, "checkout": 3,
        "check out": 2, "cart": 3, "basket": 2, "theme": 2.5, "product page*": 3,
        "product catalogue": 3, "catalog*": 2.5, "shipping": 2.5, "shipping rates": 3,
        "online orders": 3.5, "discount code*": 2.5, "abandoned cart*": 3.5, "domain": 2,
        "ecommerce": 3, "e-commerce": 3, "variants": 2.5, "paypal": 2, "fulfil*": 2.5,
        "fulfill*": 2.5, "shopify": 2, "orders": 1.5, "order confirmation": 2.5, "shop": 1.5,
        "delivery": 1, "customers can't check out": 4, "product images": 3, "collections": 2,
        "shop's": 2, "shop admin": 3, "bundles": 2, "order status": 2.5,
    },
    "pos": {
        "brightwave pos": 5, "pos": 4, "point of sale": 4, "terminal*": 3, "card reader*": 4,
        "reader": 1.5, "receipt printer*": 4, "printer": 2, "barcode*": 3, "scanner*": 2.5,
        "till": 1.5, "tills": 3, "cash drawer": 4, "register": 1, "in-store": 3, "in store": 3,
        "tap to pay": 3.5, "contactless": 3, "offline mode": 3.5, "tablet": 2, "ipad": 2.5,
        "end of day": 2.5, "z report": 3.5, "z-report": 3.5, "shift": 1.5, "cashier*": 3,
        "tips": 2, "restaurant": 1.5, "stores": 1, "counter": 1.5, "card payments": 2,
        "take payments": 2, "take card payments": 3, "chip and pin": 3.5, "pin pad": 3.5,
        "hardware": 2.5,
    },
    "api": {
        "api": 4, "apis": 4, "endpoint*": 3, "webhook*": 4, "sdk": 4, "rate limit*": 4,
        "429": 3.5, "oauth": 3.5, "access token": 3, "api key*": 4, "client id": 3,
        "client secret": 3, "json": 2, "graphql": 4, "developer*": 2.5, "http": 2,
        "curl": 3.5, "python": 2, "javascript": 2, "node": 1.5, "payload": 2.5,
        "callback": 2, "status code": 2.5, "sandbox": 3, "openapi": 4, "swagger": 3.5,
        "pagination": 3, "paginat*": 3, "request body": 3, "response body": 3,
        "integration": 1.5, "our integration": 2.5, "our app": 1,
    },
}

# Words that deny the phrase right after them ("not a bug", "no outage", "wasn't charged").
# "can't", "won't", "doesn't" are absent on purpose: "can't log in" states the problem.
NEGATORS = frozenset(
    {"not", "no", "never", "without", "isn't", "wasn't", "aren't", "weren't", "nothing", "none"}
)

# Priority cues; negation applies here too ("not urgent" is calm, not urgent).
URGENCY: Lexicon = {
    "urgent": 2, "urgently": 2, "asap": 2, "immediately": 1.5, "right now": 1.5,
    "as soon as possible": 2, "critical": 2, "emergency": 2.5, "blocking": 1.5,
    "blocker": 2, "cannot process": 1.5, "can't process": 1.5, "payroll is due": 2.5,
    "payday": 1, "pay day": 1, "deadline": 1.5, "losing money": 2.5, "losing sales": 2.5,
    "lost sales": 2, "customers can't": 1.5, "customers cannot": 1.5, "all users": 1.5,
    "everyone": 1, "production": 1.5, "all stores": 1.5, "all our stores": 1.5,
    "can't take payments": 2.5, "cannot take payments": 2.5, "can't pay our staff": 3,
    "cannot pay our staff": 3, "today": 0.5, "whole team": 1, "entire": 0.5,
    "data loss": 2.5, "lost data": 2.5, "deleted": 1, "suspended": 1.5, "locked out": 1,
    "can't work": 1.5, "cannot work": 1.5, "stopped": 0.5, "nobody can": 1.5,
}
CALM: Lexicon = {
    "no rush": 2.5, "no hurry": 2.5, "whenever you can": 2.5, "when you get a chance": 2.5,
    "whenever you get a chance": 2.5, "not urgent": 3, "low priority": 3, "minor": 1.5,
    "cosmetic": 2.5, "typo": 2, "just curious": 2, "just wondering": 2, "nice to have": 2,
    "at your convenience": 2.5, "small thing": 2, "in the future": 1, "eventually": 1,
    "when convenient": 2.5, "when you have time": 2.5, "no urgency": 3, "nothing urgent": 3,
}

# Impact, as the capability defines the priorities (docs/capabilities.md): what the
# ticket says about who is affected and what still works, not how loud it is.
# "A business function blocked or many users affected, no workaround": at least high.
BLOCKED: Lexicon = {
    "no workaround": 1, "no work around": 1, "no way around": 1, "can't find a way around": 1,
    "cannot find a way around": 1, "without a workaround": 1, "is blocked": 1, "are blocked": 1,
    "we're blocked": 1, "blocks us": 1, "blocking us": 1, "stopping us from": 1,
    "stops us from": 1, "prevents us from": 1, "keeps us from": 1, "can't finish": 1,
    "cannot finish": 1, "can't complete": 1, "cannot complete": 1, "depends on this": 1,
    "depend on this": 1, "please prioritise": 1, "please prioritize": 1,
    "needs attention soon": 1, "need this fixed soon": 1, "everyone is affected": 1,
    "all our users are affected": 1, "all users are affected": 1, "same for all our users": 1,
    "whole team is affected": 1, "entire team is affected": 1, "affects all": 1,
    "affects everyone": 1, "all of our staff": 0.5, "all our staff": 0.5, "all our users": 0.5,
    "all visitors": 0.5, "all our customers": 0.5, "nobody can": 1, "no one can": 1,
    "nobody here can": 1, "no one here can": 1, "until this is fixed": 1,
}
# "Production down, an active security incident, money or data being lost now": urgent.
STANDSTILL: Lexicon = {
    "at a standstill": 1, "standstill": 1, "act now": 1, "active attack": 1,
    "stopped immediately": 1, "costing us money": 1, "as we speak": 1,
    "can't take payments": 1, "cannot take payments": 1, "can't take any payments": 1,
    "can't pay our staff": 1, "cannot pay our staff": 1, "data loss": 1, "lost data": 1,
    "business is down": 1, "can't trade": 1, "cannot trade": 1,
}
# A deadline: a problem that must be solved by a date is not "no time pressure" (normal).
TIME_BOUND: Lexicon = {
    "this week": 1, "next week": 1, "next few days": 1, "coming days": 1, "by friday": 1,
    "by monday": 1, "by tomorrow": 1, "before the weekend": 1, "before friday": 1,
    "month-end": 1, "month end": 1, "deadline": 1, "end of the month": 1, "in time for": 1,
}
# "A real problem with a workaround or limited impact": at most normal.
LIMITED: Lexicon = {
    "have a workaround": 1, "as a workaround": 1, "workaround for now": 1,
    "work around it": 1, "not a big deal": 1, "no big deal": 1, "not critical": 1,
    "not urgent": 1, "still works": 1, "covering for me": 1, "can live with it": 1,
    "only affects a couple": 1, "just flagging": 1, "thought you should know": 1,
    "didn't click": 1,
}
# An active incident (urgent) rather than a report about a weakness (high).
SECURITY_INCIDENT: Lexicon = {
    "hacked": 1, "compromised": 1, "breach": 1, "stolen": 1, "someone logged in": 1,
    "unauthori*": 1, "fraudulent": 1, "not me": 1, "wasn't me": 1, "leaked": 1,
    "right now": 1, "data exposure": 1, "other customers' data": 1, "someone else's data": 1,
}
# Outage words that mean degraded rather than down (high rather than urgent).
SOFT_OUTAGE: Lexicon = {
    "slow": 1, "degraded": 1, "intermittent*": 1, "sometimes": 1, "some of": 0.5, "partially": 1,
    "barely": 1, "takes ages": 1, "take ages": 1, "takes minutes": 1, "still works": 1,
}
# fmt: on
