// prepare end to end on a small synthetic corpus: layout, round trip, cache
// reuse and rebuild, bad input, and the prepare binary's output contract.
#include "harness/prepare.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <random>
#include <sstream>

#include "harness/constants.h"
#include "harness/dataset.h"
#include "harness/input_error.h"
#include "harness/test_util.h"
#include "harness/tokenizer.h"

namespace harness {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Random words over a-z (enough distinct pairs for 7932 merges), a few digits
// and a multibyte word, 40 words a document.
std::vector<std::string> synthetic_docs(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> docs;
  for (int d = 0; d < n; ++d) {
    std::string doc;
    for (int w = 0; w < 40; ++w) {
      if (w) doc += (w % 13 == 0) ? "\n" : " ";
      const int len = 3 + rng() % 8;
      for (int k = 0; k < len; ++k) doc.push_back(static_cast<char>('a' + rng() % 26));
      if (w % 17 == 5) doc += " " + std::to_string(rng() % 100000) + " caf\xC3\xA9";
    }
    docs.push_back(doc);
  }
  return docs;
}

std::string escape_json(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

void write_jsonl(const std::string& path, const std::vector<std::string>& docs) {
  std::string text;
  for (const auto& d : docs) text += "{\"text\": \"" + escape_json(d) + "\", \"source\": \"synthetic\"}\n";
  testing::write_text(path, text);
}

struct Fixture {
  TempDir dir;
  std::vector<std::string> train_docs = synthetic_docs(700, 1);
  std::vector<std::string> val_docs = synthetic_docs(25, 2);
  PrepareOptions options;
  Fixture() {
    write_jsonl(dir.file("train.jsonl"), train_docs);
    write_jsonl(dir.file("val.jsonl"), val_docs);
    options.train = {dir.file("train.jsonl")};
    options.val = {dir.file("val.jsonl")};
    options.cache_dir = dir.file("cache");
    options.threads = 2;
  }
};

std::string error_of(const PrepareOptions& o) {
  try {
    prepare_dataset(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Prepare, WritesACompleteDatasetThatDecodesBack) {
  Fixture f;
  PrepareResult r = prepare_dataset(f.options);
  EXPECT_FALSE(r.reused);
  EXPECT_TRUE(fs::path(r.data_dir).is_absolute());
  EXPECT_EQ(fs::path(r.data_dir).parent_path(), fs::path(f.dir.file("cache")));

  std::vector<std::string> tokens = read_tiktoken_file(r.data_dir + "/tokenizer.tiktoken");
  ASSERT_EQ(tokens.size(), static_cast<size_t>(NUM_LEARNED_TOKENS));
  std::vector<int32_t> token_bytes = load_token_bytes(r.data_dir);
  EXPECT_EQ(token_bytes['a'], 1);
  EXPECT_EQ(token_bytes[300], static_cast<int32_t>(tokens[300].size()));
  for (int id = NUM_LEARNED_TOKENS; id < VOCAB_SIZE; ++id) EXPECT_EQ(token_bytes[id], 0);

  TokenShard train(r.data_dir, "train");
  TokenShard val(r.data_dir, "val");
  ASSERT_EQ(train.num_docs(), f.train_docs.size());
  ASSERT_EQ(val.num_docs(), f.val_docs.size());
  Tokenizer tok(std::make_shared<const BpeEncoder>(tokens));
  for (size_t d = 0; d < val.num_docs(); ++d) {
    std::vector<uint16_t> ids(val.tokens() + val.doc_begin(d) + 1, val.tokens() + val.doc_end(d));
    EXPECT_EQ(tok.decode(ids), f.val_docs[d]);
    std::vector<uint16_t> again;
    tok.encode(f.val_docs[d], again);
    EXPECT_EQ(again, ids);
  }
  std::ifstream meta(r.data_dir + "/meta.json");
  std::stringstream m;
  m << meta.rdbuf();
  EXPECT_NE(m.str().find("\"format\": 1"), std::string::npos);
  EXPECT_NE(m.str().find("\"documents\": 700"), std::string::npos);
  EXPECT_NE(m.str().find("\"learned_tokens\": 8188"), std::string::npos);
  // Nothing temporary is left beside the dataset.
  size_t entries = 0;
  for (auto& e : fs::directory_iterator(f.dir.file("cache"))) entries += e.path().filename().string()[0] != '.';
  EXPECT_EQ(entries, 1u);
  EXPECT_FALSE(fs::exists(fs::path(f.dir.file("cache")) / ("." + fs::path(r.data_dir).filename().string())));
}

TEST(Prepare, ReusesSameInputsRebuildsChangedOrIncomplete) {
  Fixture f;
  PrepareResult first = prepare_dataset(f.options);
  PrepareResult second = prepare_dataset(f.options);
  EXPECT_TRUE(second.reused);
  EXPECT_EQ(second.data_dir, first.data_dir);

  // A dataset missing a shard (as if damaged) is not trusted: rebuilt in place.
  fs::remove(first.data_dir + "/train.bin");
  PrepareResult rebuilt = prepare_dataset(f.options);
  EXPECT_FALSE(rebuilt.reused);
  EXPECT_EQ(rebuilt.data_dir, first.data_dir);
  EXPECT_TRUE(fs::exists(first.data_dir + "/train.bin"));

  // A leftover temporary directory of a dead process is cleaned up.
  fs::create_directories(f.dir.file("cache/.tmp-x-999999999"));
  f.val_docs[3] += " changed";
  write_jsonl(f.dir.file("val.jsonl"), f.val_docs);
  PrepareResult changed = prepare_dataset(f.options);
  EXPECT_FALSE(changed.reused);
  EXPECT_NE(changed.data_dir, first.data_dir);
  EXPECT_FALSE(fs::exists(f.dir.file("cache/.tmp-x-999999999")));
}

TEST(Prepare, AFewIdenticalValidationDocumentsAreCounted) {
  Fixture f;
  std::vector<std::string> val = synthetic_docs(150, 3);
  val[40] = f.train_docs[9];  // one boilerplate document in 150: under 1%
  write_jsonl(f.dir.file("val.jsonl"), val);
  PrepareResult r = prepare_dataset(f.options);
  std::ifstream meta(r.data_dir + "/meta.json");
  std::stringstream m;
  m << meta.rdbuf();
  EXPECT_NE(m.str().find("\"identical_to_train\": 1}"), std::string::npos) << m.str();
  EXPECT_EQ(TokenShard(r.data_dir, "val").num_docs(), 150u);
}

TEST(Prepare, BadInputIsNamedByFileAndLine) {
  Fixture f;
  PrepareOptions o = f.options;
  o.val = {f.dir.file("nope.jsonl")};
  EXPECT_EQ(error_of(o), f.dir.file("nope.jsonl") + ": cannot open: No such file or directory");

  testing::write_text(f.dir.file("empty.jsonl"), "\n\n{\"text\": \"\"}\n");
  o = f.options;
  o.train = {f.dir.file("empty.jsonl")};
  EXPECT_EQ(error_of(o), f.dir.file("empty.jsonl") + ": no documents in the training input");

  // A validation document equal to a training one (line 8 of train.jsonl).
  std::vector<std::string> leaky = f.val_docs;
  leaky[1] = f.train_docs[7];
  write_jsonl(f.dir.file("leaky.jsonl"), leaky);
  o = f.options;
  o.val = {f.dir.file("leaky.jsonl")};
  EXPECT_EQ(error_of(o), f.dir.file("leaky.jsonl") + ":2: validation document identical to training document " +
                             f.dir.file("train.jsonl") + ":8 (1 of 25 validation documents are; at most 1% may be)");
  o.val = o.train;  // the same file twice
  EXPECT_NE(error_of(o).find("(700 of 700 validation documents are"), std::string::npos);

  testing::write_text(f.dir.file("tiny.txt"), "just a few words\n\nnot enough for a vocabulary\n");
  o = f.options;
  o.train = {f.dir.file("tiny.txt")};
  EXPECT_NE(error_of(o).find(f.dir.file("tiny.txt") + ": training text too small"), std::string::npos);
  EXPECT_FALSE(fs::exists(f.dir.file("cache")) && !fs::is_empty(f.dir.file("cache")));
}

#ifdef PREPARE_BINARY
// Runs the prepare binary; returns its exit status, stdout and stderr.
int run_prepare(const std::string& args, const TempDir& dir, std::string& out, std::string& err) {
  const std::string cmd = std::string(PREPARE_BINARY) + " " + args + " >" + dir.file("out.txt") + " 2>" + dir.file("err.txt");
  int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  out = slurp(dir.file("out.txt"));
  err = slurp(dir.file("err.txt"));
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PrepareBinary, LastLineIsDataDirAndErrorsAreOneLine) {
  Fixture f;
  std::string out, err;
  const std::string common = " --cache " + f.dir.file("cache") + " --threads 2";
  ASSERT_EQ(run_prepare("--train " + f.dir.file("train.jsonl") + " --val " + f.dir.file("val.jsonl") + common, f.dir,
                        out, err), 0) << err;
  ASSERT_FALSE(out.empty());
  std::string last = out.substr(out.rfind('\n', out.size() - 2) + 1);
  EXPECT_EQ(last.rfind("data_dir: " + f.dir.file("cache") + "/", 0), 0u) << out;
  EXPECT_EQ(last.back(), '\n');

  testing::write_text(f.dir.file("bad.jsonl"), "{\"text\": \"fine\"}\n{\"body\": \"x\"}\n");
  EXPECT_EQ(run_prepare("--train " + f.dir.file("bad.jsonl") + " --val " + f.dir.file("val.jsonl") + common, f.dir,
                        out, err), 1);
  EXPECT_EQ(err, "prepare: error: " + f.dir.file("bad.jsonl") + ":2: no \"text\" field\n");
  EXPECT_EQ(run_prepare("--train " + f.dir.file("train.jsonl") + " --bogus 1", f.dir, out, err), 1);
  EXPECT_EQ(err, "prepare: error: --bogus: unknown flag (see --help)\n");
}
#endif

}  // namespace
}  // namespace harness
