//! The writing requests tasks are built on: our own list, written for this environment (never
//! IFEval's prompts, which are the held-out evaluation). Each request names what to write and
//! about what; its topic words are natural keywords for the keyword constraints.

/// One writing request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The request as the user would type it: one or two sentences.
    pub text: &'static str,
    /// Lowercase words an answer on this topic would naturally use.
    pub topic: &'static [&'static str],
}

const fn r(text: &'static str, topic: &'static [&'static str]) -> Request {
    Request { text, topic }
}

/// Every request. Editing this list changes the task of (almost) every seed: it is part of the
/// environment's definition, like the templates in `phrasing.rs`.
pub const REQUESTS: &[Request] = &[
    // Emails.
    r("Write an email to your neighbour asking them to water your plants while you are on holiday.", &["plants", "water", "holiday", "keys"]),
    r("Write an email to a colleague asking to move tomorrow's meeting to Friday afternoon.", &["meeting", "friday", "calendar", "schedule"]),
    r("Write an email to a hotel asking whether they allow small dogs.", &["dog", "room", "booking", "pets"]),
    r("Write an email thanking a teacher for helping your child learn to read.", &["teacher", "reading", "books", "patience"]),
    r("Write an email to a landlord reporting a leaking kitchen tap.", &["tap", "kitchen", "repair", "water"]),
    r("Write an email inviting your team to a picnic in the park next Saturday.", &["picnic", "park", "saturday", "food"]),
    r("Write an email to a customer apologising for a late delivery.", &["delivery", "order", "apology", "refund"]),
    r("Write an email asking a library to extend the loan of a book.", &["library", "book", "loan", "week"]),
    r("Write an email to a friend you have not seen in years.", &["years", "memories", "coffee", "news"]),
    r("Write an email to a gym cancelling your membership.", &["membership", "gym", "cancel", "month"]),
    r("Write an email to your manager asking for a day off next week.", &["leave", "week", "manager", "work"]),
    r("Write an email welcoming a new member to a chess club.", &["chess", "club", "games", "welcome"]),
    r("Write an email to a bakery ordering a birthday cake for twenty people.", &["cake", "birthday", "chocolate", "order"]),
    r("Write an email to a plumber asking for a quote to fix a boiler.", &["boiler", "quote", "heating", "visit"]),
    r("Write an email reminding students that their essays are due on Monday.", &["essay", "monday", "deadline", "students"]),
    // Stories.
    r("Write a short story about a lighthouse keeper who finds a message in a bottle.", &["lighthouse", "bottle", "message", "sea"]),
    r("Write a short story about a robot that learns to paint.", &["robot", "paint", "colours", "canvas"]),
    r("Write a short story about a girl who can talk to birds.", &["birds", "girl", "forest", "song"]),
    r("Write a story about a lost umbrella that travels around a city.", &["umbrella", "rain", "city", "bus"]),
    r("Write a story about two rival bakers who must work together.", &["bread", "bakers", "oven", "rival"]),
    r("Write a short story about a cat who becomes the mayor of a small town.", &["cat", "mayor", "town", "election"]),
    r("Write a story set on a train that never stops.", &["train", "passengers", "tickets", "window"]),
    r("Write a short story about an old man who plants a tree every year.", &["tree", "seeds", "garden", "seasons"]),
    r("Write a story about a dragon who is afraid of fire.", &["dragon", "fire", "cave", "courage"]),
    r("Write a story about a child's first day at a new school.", &["school", "classroom", "friends", "teacher"]),
    r("Write a short mystery story about a missing painting in a museum.", &["museum", "painting", "detective", "clue"]),
    r("Write a story about a family that moves to a farm.", &["farm", "cows", "family", "harvest"]),
    r("Write a story about a musician who loses her voice before a concert.", &["concert", "voice", "stage", "music"]),
    r("Write a bedtime story about a sleepy moon.", &["moon", "stars", "night", "dreams"]),
    r("Write a story about astronauts who find a garden on Mars.", &["mars", "astronauts", "garden", "rocket"]),
    // Product descriptions and advertisements.
    r("Write a product description for a reusable water bottle.", &["bottle", "steel", "water", "cold"]),
    r("Write a product description for a pair of noise-cancelling headphones.", &["headphones", "sound", "battery", "music"]),
    r("Write a product description for a handmade wooden chess set.", &["wooden", "chess", "pieces", "board"]),
    r("Write a description of a new smartphone app that helps people drink more water.", &["app", "water", "reminders", "health"]),
    r("Write a product description for a lightweight hiking backpack.", &["backpack", "hiking", "pockets", "straps"]),
    r("Write a product description for a scented candle that smells like the sea.", &["candle", "scent", "sea", "wax"]),
    r("Write an advertisement for a bicycle repair shop.", &["bicycle", "repair", "tyres", "shop"]),
    r("Write an advertisement for a summer art camp for children.", &["camp", "art", "children", "summer"]),
    r("Write a product description for an electric kettle.", &["kettle", "tea", "boil", "water"]),
    r("Write a product description for a board game about building cities.", &["game", "cities", "players", "cards"]),
    r("Write an advertisement for a second-hand bookshop.", &["books", "shop", "shelves", "stories"]),
    r("Write a product description for a warm winter coat.", &["coat", "winter", "warm", "pockets"]),
    // Explanations.
    r("Explain how rainbows form.", &["light", "rain", "colours", "sun"]),
    r("Explain why the sky is blue.", &["sky", "light", "blue", "air"]),
    r("Explain how a bicycle stays upright when it moves.", &["bicycle", "wheels", "balance", "speed"]),
    r("Explain what a volcano is and why it erupts.", &["volcano", "lava", "magma", "eruption"]),
    r("Explain how bees make honey.", &["bees", "honey", "flowers", "hive"]),
    r("Explain to a child how plants grow from seeds.", &["seeds", "soil", "water", "roots"]),
    r("Explain how a refrigerator keeps food cold.", &["refrigerator", "cold", "food", "heat"]),
    r("Explain why we have seasons on Earth.", &["seasons", "earth", "sun", "summer"]),
    r("Explain what a budget is and why it helps.", &["budget", "money", "savings", "spending"]),
    r("Explain how vaccines protect the body.", &["vaccine", "body", "immune", "disease"]),
    r("Explain how a library organises its books.", &["library", "books", "shelves", "catalogue"]),
    r("Explain what causes thunder and lightning.", &["thunder", "lightning", "storm", "clouds"]),
    r("Explain how recycling paper works.", &["paper", "recycling", "pulp", "trees"]),
    r("Explain why it is important to sleep well.", &["sleep", "rest", "brain", "night"]),
    r("Explain how the internet sends a message from one computer to another.", &["internet", "computer", "message", "network"]),
    // Poems.
    r("Write a poem about the first snow of winter.", &["snow", "winter", "white", "cold"]),
    r("Write a poem about a busy city at night.", &["city", "night", "lights", "streets"]),
    r("Write a poem about the sea.", &["sea", "waves", "salt", "shore"]),
    r("Write a short poem about friendship.", &["friendship", "friend", "laughter", "trust"]),
    r("Write a poem about a cup of morning coffee.", &["coffee", "morning", "cup", "warm"]),
    r("Write a poem about an old oak tree.", &["oak", "tree", "leaves", "roots"]),
    r("Write a poem about waiting for a train.", &["train", "platform", "waiting", "clock"]),
    r("Write a poem about autumn leaves.", &["autumn", "leaves", "wind", "gold"]),
    r("Write a funny poem about a cat that hates Mondays.", &["cat", "monday", "nap", "breakfast"]),
    r("Write a poem about the stars over a desert.", &["stars", "desert", "sand", "sky"]),
    // Letters.
    r("Write a letter to your future self ten years from now.", &["future", "years", "dreams", "hope"]),
    r("Write a letter to the mayor asking for more bike lanes in your town.", &["bike", "lanes", "town", "safety"]),
    r("Write a letter to a pen pal describing your hometown.", &["hometown", "streets", "people", "market"]),
    r("Write a cover letter for a job as a museum guide.", &["museum", "guide", "visitors", "history"]),
    r("Write a letter to your grandmother thanking her for a knitted scarf.", &["scarf", "grandmother", "wool", "winter"]),
    r("Write a letter from a soldier to his family during a long winter.", &["family", "winter", "home", "letter"]),
    r("Write a letter to a newspaper about litter on the beach.", &["beach", "litter", "plastic", "volunteers"]),
    r("Write a letter recommending a former student for a scholarship.", &["student", "scholarship", "talent", "work"]),
    r("Write a letter to an author telling her what her book meant to you.", &["book", "author", "story", "characters"]),
    r("Write a letter of complaint about a noisy hotel room.", &["hotel", "noise", "room", "night"]),
    // Summaries of a stated topic.
    r("Summarise the life cycle of a butterfly: egg, caterpillar, chrysalis and adult.", &["butterfly", "caterpillar", "egg", "wings"]),
    r("Summarise how a bill becomes a law in a parliament.", &["law", "parliament", "vote", "bill"]),
    r("Summarise the water cycle for a school textbook.", &["water", "clouds", "rain", "evaporation"]),
    r("Summarise the main benefits of walking every day.", &["walking", "health", "heart", "exercise"]),
    r("Summarise the history of the bicycle from the first wooden models to modern bikes.", &["bicycle", "history", "wheels", "models"]),
    r("Summarise why people keep houseplants.", &["plants", "air", "home", "green"]),
    r("Summarise the rules of football for someone who has never watched a match.", &["football", "goal", "team", "ball"]),
    r("Summarise how a seed bank protects crops for the future.", &["seeds", "crops", "bank", "future"]),
    r("Summarise what a healthy breakfast looks like.", &["breakfast", "fruit", "protein", "energy"]),
    r("Summarise the main ideas of saving money for a rainy day.", &["savings", "money", "emergency", "budget"]),
    // Advice.
    r("Give advice to someone starting their first job.", &["job", "colleagues", "questions", "work"]),
    r("Give tips for keeping a small apartment tidy.", &["apartment", "tidy", "storage", "clean"]),
    r("Give advice on how to prepare for a job interview.", &["interview", "questions", "practice", "company"]),
    r("Give tips for learning a new language.", &["language", "words", "practice", "listening"]),
    r("Give advice to a student who feels stressed before exams.", &["exams", "stress", "study", "breaks"]),
    r("Give tips for taking better photos with a phone.", &["photos", "light", "phone", "camera"]),
    r("Give advice on how to start running.", &["running", "shoes", "pace", "distance"]),
    r("Give tips for saving energy at home.", &["energy", "home", "lights", "heating"]),
    r("Give advice to someone adopting a dog for the first time.", &["dog", "walks", "training", "food"]),
    r("Give tips for planning a road trip.", &["road", "trip", "map", "car"]),
    r("Give advice on how to make friends in a new city.", &["friends", "city", "clubs", "neighbours"]),
    r("Give tips for growing tomatoes on a balcony.", &["tomatoes", "balcony", "pots", "sun"]),
    // Recipes.
    r("Write a recipe for a simple vegetable soup.", &["soup", "vegetables", "carrots", "onion"]),
    r("Write a recipe for pancakes.", &["pancakes", "flour", "eggs", "milk"]),
    r("Write a recipe for a fresh summer salad.", &["salad", "tomatoes", "cucumber", "lemon"]),
    r("Write a recipe for banana bread.", &["banana", "bread", "flour", "oven"]),
    r("Write a recipe for a hot chocolate drink.", &["chocolate", "milk", "sugar", "cup"]),
    r("Write a recipe for a vegetable stir fry.", &["vegetables", "rice", "garlic", "pan"]),
    r("Write a recipe for lemonade.", &["lemons", "sugar", "water", "ice"]),
    r("Write a recipe for roasted potatoes.", &["potatoes", "oven", "salt", "oil"]),
    // Reviews.
    r("Write a review of a small Italian restaurant you visited.", &["restaurant", "pasta", "waiter", "dessert"]),
    r("Write a review of a film about a journey across the ocean.", &["film", "ocean", "journey", "actors"]),
    r("Write a review of a pair of running shoes.", &["shoes", "running", "comfort", "price"]),
    r("Write a review of a museum of natural history.", &["museum", "dinosaurs", "exhibits", "history"]),
    r("Write a review of a novel about a family of farmers.", &["novel", "family", "farm", "characters"]),
    r("Write a review of a new coffee shop in your street.", &["coffee", "shop", "cake", "staff"]),
    r("Write a review of a weekend stay at a mountain cabin.", &["cabin", "mountain", "weekend", "fire"]),
    r("Write a review of a children's science show.", &["show", "science", "children", "experiments"]),
    // Other forms.
    r("Write a short speech for a friend's wedding.", &["wedding", "love", "friend", "future"]),
    r("Write a dialogue between a customer and a shop assistant about a broken toaster.", &["toaster", "customer", "receipt", "shop"]),
    r("Write a blog post about your favourite walk in the countryside.", &["walk", "countryside", "fields", "path"]),
    r("Write a job advertisement for a gardener at a public park.", &["gardener", "park", "plants", "job"]),
    r("Write a welcome message for visitors to a zoo.", &["zoo", "animals", "visitors", "map"]),
    r("Write a short biography of an imaginary inventor.", &["inventor", "invention", "workshop", "idea"]),
    r("Write a diary entry about a rainy Sunday.", &["rain", "sunday", "window", "tea"]),
    r("Write a motivational message for a team before a big game.", &["team", "game", "effort", "together"]),
    r("Write the rules for a new playground game.", &["game", "players", "ball", "rules"]),
    r("Write a guide for a first visit to a farmers' market.", &["market", "farmers", "vegetables", "stalls"]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_many_distinct_and_well_formed() {
        assert!(REQUESTS.len() >= 120, "{}", REQUESTS.len());
        let mut texts: Vec<&str> = REQUESTS.iter().map(|r| r.text).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), REQUESTS.len(), "duplicate request");
        for r in REQUESTS {
            assert!(r.text.ends_with('.') || r.text.ends_with('?'), "{}", r.text);
            assert!(r.topic.len() >= 3, "{}", r.text);
            for w in r.topic {
                assert!(
                    !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase()),
                    "{w} in {}",
                    r.text
                );
            }
        }
    }
}
